import DataLoader from 'dataloader';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AuditEvent } from './domain/audit/audit-event.entity.ts';
import { Document } from './domain/document/document.entity.ts';
import { FieldView } from './domain/field/field-view.entity.ts';
import { Field } from './domain/field/field.entity.ts';
import { Agent } from './domain/recipient/agent.entity.ts';
import { Recipient } from './domain/recipient/recipient.entity.ts';

/**
 * Request-scoped batch loaders for nested reads. Every child collection is loaded for all parents
 * of a response with one `where parent_id in (...)` statement, so 50 envelopes with their
 * documents, recipients, agents, fields and views cost the same handful of statements as one.
 * Callers must only pass ids they are allowed to see (the parents were loaded through the tenant
 * filter), so the loaders need no team check of their own.
 */
export type Loaders = {
  documentsByEnvelope: DataLoader<string, Document[]>;
  recipientsByEnvelope: DataLoader<string, Recipient[]>;
  fieldsByEnvelope: DataLoader<string, Field[]>;
  agentsByRecipient: DataLoader<string, Agent[]>;
  viewsByField: DataLoader<string, FieldView[]>;
  auditEventsByEnvelope: DataLoader<string, AuditEvent[]>;
};

function groupBy<T>(keys: readonly string[], rows: T[], keyOf: (row: T) => string): T[][] {
  const groups = new Map<string, T[]>(keys.map((key) => [key, []]));
  for (const row of rows) groups.get(keyOf(row))?.push(row);
  return keys.map((key) => groups.get(key) ?? []);
}

export function createLoaders(em: EntityManager): Loaders {
  return {
    documentsByEnvelope: new DataLoader(async (envelopeIds) =>
      groupBy(
        envelopeIds,
        await em.find(Document, { envelope: { $in: [...envelopeIds] } }, { orderBy: [{ order: 'asc' }, { createdAt: 'asc' }, { id: 'asc' }] }),
        (document) => document.envelope!.id,
      ),
    ),
    recipientsByEnvelope: new DataLoader(async (envelopeIds) =>
      groupBy(
        envelopeIds,
        await em.find(Recipient, { envelope: { $in: [...envelopeIds] } }, { orderBy: [{ order: 'asc' }, { createdAt: 'asc' }, { id: 'asc' }] }),
        (recipient) => recipient.envelope.id,
      ),
    ),
    fieldsByEnvelope: new DataLoader(async (envelopeIds) =>
      groupBy(
        envelopeIds,
        await em.find(Field, { envelope: { $in: [...envelopeIds] } }, { orderBy: [{ createdAt: 'asc' }, { identifier: 'asc' }] }),
        (field) => field.envelope!.id,
      ),
    ),
    agentsByRecipient: new DataLoader(async (recipientIds) =>
      groupBy(
        recipientIds,
        await em.find(Agent, { recipient: { $in: [...recipientIds] } }, { orderBy: { position: 'asc' } }),
        (agent) => agent.recipient.id,
      ),
    ),
    auditEventsByEnvelope: new DataLoader(async (envelopeIds) =>
      groupBy(
        envelopeIds,
        await em.find(AuditEvent, { streamId: { $in: [...envelopeIds] } }, { orderBy: [{ streamId: 'asc' }, { seq: 'asc' }] }),
        (event) => event.streamId,
      ),
    ),
    viewsByField: new DataLoader(async (fieldIds) =>
      groupBy(
        fieldIds,
        await em.find(FieldView, { field: { $in: [...fieldIds] } }, { orderBy: { position: 'asc' } }),
        (view) => view.field.id,
      ),
    ),
  };
}
