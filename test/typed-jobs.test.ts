/**
 * Typed jobs (issue 34): each outbox topic's payload is typed at both ends, by the one map in
 * topics.ts (`OutboxPayloads`): `enqueue(em, topic, payload)` and `OutboxHandler<Topic>`. The
 * type assertions here are checked by `npm run typecheck` (a `@ts-expect-error` that no longer
 * errs fails it); the grep keeps the casts from coming back.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { artefactCertificateHandler } from '../src/domain/artefact/certificate.service.ts';
import { enqueue } from '../src/domain/outbox/outbox.ts';
import { handles, type OutboxClaimOf, type OutboxHandler } from '../src/domain/outbox/outbox-worker.ts';
import { type BulkSendStepPayload, type InvitationPayload, OUTBOX_TOPICS, type OutboxTopic, type WebhookDeliveryPayload } from '../src/domain/outbox/topics.ts';

describe('typed jobs', () => {
  it('a handler reads its topic payload, typed; a union of topics is told apart by topic', () => {
    expectTypeOf<OutboxClaimOf<'webhook.delivery'>['payload']>().toEqualTypeOf<WebhookDeliveryPayload>();
    expectTypeOf<Parameters<OutboxHandler<'bulk_send.step'>>[0]['payload']>().toEqualTypeOf<BulkSendStepPayload>();
    const kindOf = (message: OutboxClaimOf<'signing.invitation' | 'webhook.delivery'>) => (message.topic === 'signing.invitation' ? message.payload.kind : message.payload.deliveryId);
    expectTypeOf(kindOf).returns.toEqualTypeOf<InvitationPayload['kind'] | string>();
    // A name that is no topic (a typo) has no payload to read.
    expectTypeOf<OutboxClaimOf<'artefact.seel'>>().toBeNever();
    expect(handles(OUTBOX_TOPICS.fixCertificate, artefactCertificateHandler({} as never))[0]).toBe('artefact.certificate');
  });

  it('a handler is registered only under its own topic, and enqueue takes only its topic payload', () => {
    const registerWrongly = () =>
      // @ts-expect-error: the certificate handler reads `artefact.certificate` messages, not seal ones.
      handles(OUTBOX_TOPICS.sealArtefacts, artefactCertificateHandler({} as never));
    const enqueueWrongly = (em: EntityManager) =>
      // @ts-expect-error: a bulk-send step names its bulk send.
      enqueue(em, OUTBOX_TOPICS.bulkSendStep, { teamId: 't' }, { now: new Date() });
    expect([registerWrongly, enqueueWrongly].every((wrong) => typeof wrong === 'function')).toBe(true);
    expectTypeOf<OutboxTopic>().toEqualTypeOf<(typeof OUTBOX_TOPICS)[keyof typeof OUTBOX_TOPICS]>();
  });

  it('no handler casts its payload', () => {
    const root = path.resolve(import.meta.dirname, '..', 'src');
    const files = (fs.readdirSync(root, { recursive: true }) as string[]).filter((file) => file.endsWith('.ts'));
    const casts = files.filter((file) => /payload as (Record<string, unknown>|unknown as|\{|[A-Z]\w*Payload\b)/.test(fs.readFileSync(path.join(root, file), 'utf8')));
    expect(casts).toEqual([]);
  });
});
