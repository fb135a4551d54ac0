import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import type { Envelope } from '../envelope/envelope.entity.ts';
import { auditChange } from '../change.ts';
import { changeDraftEnvelope, createInDraftEnvelope } from '../envelope/draft-edit.ts';
import { ENVELOPE_CAPACITY, ensureCapacity } from '../capacity.ts';
import { readRecipient, type RecipientData } from '../owner/owner.read.ts';
import type { ServiceContext } from '../service-context.ts';
import { boundedInteger, identifierSlug, parseInput, readableName } from '../validation.ts';
import { Field } from '../field/field.entity.ts';
import { Agent } from './agent.entity.ts';
import { agentsSchema, resolveAgentInputs, type ResolvedAgent } from './agent-input.ts';
import { Recipient, recipientTypes, type RecipientType } from './recipient.entity.ts';
import {
  RecipientDelegatorBoundError,
  RecipientDuplicateIdentifierError,
  RecipientHasFieldsError,
  RecipientHostBoundError,
  RecipientNotFoundError,
} from './recipient.errors.ts';

/** Distinct, readable on white, cycled by the recipient's position in the envelope. */
export const RECIPIENT_COLOR_PALETTE = ['#2563EB', '#DC2626', '#059669', '#D97706', '#7C3AED', '#DB2777', '#0891B2', '#65A30D', '#EA580C', '#4F46E5'];

const colorSchema = z.string().regex(/^#[0-9A-Fa-f]{6}$/, 'must be a hex colour like #2563EB');

/** A recipient's own keys, as envelopes and template roles share them (templates add their own). */
export const recipientShape = {
  type: z.enum(recipientTypes, { error: `must be one of ${recipientTypes.join(', ')}` }),
  identifier: identifierSlug,
  roleName: readableName(1, 100),
  order: boundedInteger(0, 1000),
  required: z.boolean({ error: 'must be true or false' }),
  color: colorSchema,
  hostedById: z.string().nullable(),
  delegatedById: z.string().nullable(),
  agents: agentsSchema,
};

export const createRecipientInput = z.strictObject({
  type: recipientShape.type,
  identifier: recipientShape.identifier,
  roleName: recipientShape.roleName,
  order: recipientShape.order.default(0),
  required: recipientShape.required.default(true),
  color: recipientShape.color.optional(),
  hostedById: recipientShape.hostedById.optional(),
  delegatedById: recipientShape.delegatedById.optional(),
  agents: recipientShape.agents.default([]),
});

export const updateRecipientInput = z.strictObject(recipientShape).partial();

/**
 * The links between recipients (of an envelope, or roles of a template), checked against the
 * owner's other recipients, which `findSibling` looks up by id within the same owner:
 * an `in_person_signer` must name a `host` of the same owner in `hostedById` (and only it may);
 * `delegatedById` must name another recipient of the same owner.
 */
export async function checkRecipientLinks<Sibling extends { id: string; type: RecipientType }>(
  recipient: { id?: string; type: RecipientType; hostedById: string | null; delegatedById: string | null },
  pathPrefix: string,
  findSibling: (id: string) => Promise<Sibling | null>,
  ownerNoun: 'envelope' | 'template' = 'envelope',
): Promise<{ hostedBy: Sibling | null; delegatedBy: Sibling | null }> {
  const issues: ValidationIssue[] = [];
  let hostedBy: Sibling | null = null;
  let delegatedBy: Sibling | null = null;
  if (recipient.type === 'in_person_signer') {
    if (!recipient.hostedById) {
      issues.push({ path: `${pathPrefix}.hostedById`, message: 'is required for an in_person_signer: name the host recipient' });
    } else {
      hostedBy = isUuid(recipient.hostedById) ? await findSibling(recipient.hostedById) : null;
      // A recipient never hosts itself: on a type change its stored type may still read `host`.
      if (!hostedBy || hostedBy.type !== 'host' || hostedBy.id === recipient.id) {
        issues.push({ path: `${pathPrefix}.hostedById`, message: `must be the id of a recipient of type host in this ${ownerNoun}` });
        hostedBy = null;
      }
    }
  } else if (recipient.hostedById) {
    issues.push({ path: `${pathPrefix}.hostedById`, message: 'is only allowed for an in_person_signer' });
  }
  if (recipient.delegatedById) {
    delegatedBy = isUuid(recipient.delegatedById) ? await findSibling(recipient.delegatedById) : null;
    if (!delegatedBy || delegatedBy.id === recipient.id) {
      issues.push({ path: `${pathPrefix}.delegatedById`, message: `must be the id of another recipient in this ${ownerNoun}` });
      delegatedBy = null;
    }
  }
  if (issues.length > 0) throw new InvalidRequestError(issues);
  return { hostedBy, delegatedBy };
}

function envelopeSibling(em: EntityManager, envelope: Envelope) {
  return (id: string) => em.findOne(Recipient, { id, envelope });
}

/**
 * The rules of a recipient's type change, for envelopes and templates alike: a host that still
 * hosts in-person signers keeps its type (`Recipient.HostRecipientBound`), and a recipient holding
 * fields cannot become a viewer (`Recipient.HasFields`).
 */
export async function checkTypeChange(
  recipient: { id: string; type: RecipientType },
  type: RecipientType,
  bound: { hostedIds: () => Promise<string[]>; fieldIds: () => Promise<string[]> },
): Promise<void> {
  if (recipient.type === 'host' && type !== 'host') {
    const hosted = await bound.hostedIds();
    if (hosted.length > 0) throw new RecipientHostBoundError(recipient.id, hosted);
  }
  if (type === 'viewer' && recipient.type !== 'viewer') {
    const held = await bound.fieldIds();
    if (held.length > 0) throw new RecipientHasFieldsError(recipient.id, held);
  }
}

/**
 * The default colour of a new recipient: the first palette colour no recipient of the envelope
 * uses yet (explicit colours included), so defaults stay distinct after removals; only when the
 * palette is exhausted does it cycle by position.
 */
async function defaultRecipientColor(em: EntityManager, envelope: Envelope): Promise<string> {
  const existing = await em.find(Recipient, { envelope });
  return firstFreeColor(existing.map((recipient) => recipient.color));
}

/** The default colour given the colours an owner's recipients use (see defaultRecipientColor). */
export function firstFreeColor(usedColors: string[]): string {
  const used = new Set(usedColors.map((color) => color.toUpperCase()));
  return RECIPIENT_COLOR_PALETTE.find((color) => !used.has(color.toUpperCase())) ?? RECIPIENT_COLOR_PALETTE[usedColors.length % RECIPIENT_COLOR_PALETTE.length];
}

async function ensureIdentifierFree(em: EntityManager, envelope: Envelope, identifier: string, exceptId?: string) {
  const existing = await em.findOne(Recipient, { envelope, identifier }, { fields: ['id'] });
  if (existing && existing.id !== exceptId) throw new RecipientDuplicateIdentifierError(identifier);
}

function replaceAgents(em: EntityManager, recipient: Recipient, agents: ResolvedAgent[]) {
  agents.forEach((agent, position) => {
    em.persist(
      em.create(Agent, {
        recipient,
        position,
        kind: agent.kind,
        info: agent.info,
        contact: agent.contact,
        group: agent.group,
        user: agent.user,
      }),
    );
  });
}

/** Adds a recipient role, with its agents, to a draft envelope. Idempotent per `Idempotency-Key`. */
export async function addRecipient(
  context: ServiceContext,
  options: { envelopeId: string; input: unknown; idempotencyKey?: string },
): Promise<RecipientData> {
  const input = parseInput(createRecipientInput, options.input, 'recipient');
  return createInDraftEnvelope(
    context,
    { envelopeId: options.envelopeId, idempotencyKey: options.idempotencyKey, request: { operation: 'addRecipient', input: options.input } },
    async (draft) => {
      const { em, envelope } = draft;
      ensureCapacity('Envelope', 'recipients', ENVELOPE_CAPACITY.recipients, await em.count(Recipient, { envelope }), 1);
      await ensureIdentifierFree(em, envelope, input.identifier);
      const links = await checkRecipientLinks(
        { type: input.type, hostedById: input.hostedById ?? null, delegatedById: input.delegatedById ?? null },
        'recipient',
        envelopeSibling(em, envelope),
      );
      const agents = await resolveAgentInputs(em, draft.caller.teamId, input.agents, 'recipient.agents');
      const recipient = em.create(Recipient, {
        envelope,
        identifier: input.identifier,
        roleName: input.roleName,
        type: input.type,
        order: input.order,
        required: input.required,
        color: input.color ?? (await defaultRecipientColor(em, envelope)),
        hostedBy: links.hostedBy,
        delegatedBy: links.delegatedBy,
      });
      em.persist(recipient);
      replaceAgents(em, recipient, agents);
      await em.flush();
      await auditChange(context, draft, {
        envelopeId: envelope.id,
        type: 'recipient.added',
        details: { recipientId: recipient.id, identifier: recipient.identifier, type: recipient.type, agentCount: agents.length },
      });
      return recipient.id;
    },
    (reading, recipientId) => readRecipient(reading, { owner: { kind: 'envelope', id: options.envelopeId }, recipientId }),
  );
}

async function findRecipient(em: EntityManager, envelope: Envelope, recipientId: string): Promise<Recipient> {
  if (!isUuid(recipientId)) throw new RecipientNotFoundError(recipientId);
  const recipient = await em.findOne(Recipient, { id: recipientId, envelope });
  if (!recipient) throw new RecipientNotFoundError(recipientId);
  return recipient;
}

async function boundRecipientIds(em: EntityManager, recipient: Recipient, link: 'hostedBy' | 'delegatedBy'): Promise<string[]> {
  const bound = await em.find(Recipient, { [link]: recipient, envelope: recipient.envelope }, { fields: ['id'] });
  return bound.map((other) => other.id);
}

/**
 * Changes a recipient of a draft envelope. Only given keys change; `agents`, when given,
 * replaces the whole agent list. A host that still hosts in-person signers keeps its type.
 */
export async function updateRecipient(
  context: ServiceContext,
  options: { envelopeId: string; recipientId: string; input: unknown },
): Promise<RecipientData> {
  const input = parseInput(updateRecipientInput, options.input, 'recipient');
  await changeDraftEnvelope(context, options.envelopeId, async (draft) => {
    const { em, envelope } = draft;
    const recipient = await findRecipient(em, envelope, options.recipientId);
    if (Object.keys(input).length === 0) return;
    if (input.identifier !== undefined && input.identifier !== recipient.identifier) {
      await ensureIdentifierFree(em, envelope, input.identifier, recipient.id);
    }
    const type = input.type ?? recipient.type;
    await checkTypeChange(recipient, type, {
      hostedIds: () => boundRecipientIds(em, recipient, 'hostedBy'),
      fieldIds: async () => (await em.find(Field, { recipient }, { fields: ['id'] })).map((field) => field.id),
    });
    const links = await checkRecipientLinks(
      {
        id: recipient.id,
        type,
        hostedById: input.hostedById !== undefined ? input.hostedById : type === 'in_person_signer' ? (recipient.hostedBy?.id ?? null) : null,
        delegatedById: input.delegatedById !== undefined ? input.delegatedById : (recipient.delegatedBy?.id ?? null),
      },
      'recipient',
      envelopeSibling(em, envelope),
    );
    const agents = input.agents === undefined ? undefined : await resolveAgentInputs(em, draft.caller.teamId, input.agents, 'recipient.agents');
    em.assign(recipient, {
      type,
      identifier: input.identifier ?? recipient.identifier,
      roleName: input.roleName ?? recipient.roleName,
      order: input.order ?? recipient.order,
      required: input.required ?? recipient.required,
      color: input.color ?? recipient.color,
      hostedBy: links.hostedBy,
      delegatedBy: links.delegatedBy,
    });
    if (agents !== undefined) {
      await em.nativeDelete(Agent, { recipient });
      replaceAgents(em, recipient, agents);
    }
    await auditChange(context, draft, {
      envelopeId: envelope.id,
      type: 'recipient.updated',
      details: { recipientId: recipient.id, changed: Object.keys(input) },
    });
  });
  return readRecipient(context, { owner: { kind: 'envelope', id: options.envelopeId }, recipientId: options.recipientId });
}

/**
 * The removal rule of a recipient (of an envelope, or a template role): refused while another one
 * is hosted by it (`Recipient.HostRecipientBound`) or delegates through it
 * (`Recipient.DelegatorRecipientBound`), since that one would be left pointing at nothing.
 */
export async function checkRemovable(
  recipientId: string,
  bound: { hostedIds: () => Promise<string[]>; delegatingIds: () => Promise<string[]> },
): Promise<void> {
  const hosted = await bound.hostedIds();
  if (hosted.length > 0) throw new RecipientHostBoundError(recipientId, hosted);
  const delegating = await bound.delegatingIds();
  if (delegating.length > 0) throw new RecipientDelegatorBoundError(recipientId, delegating);
}

/**
 * Removes a recipient from a draft envelope, with its agents and the fields assigned to it
 * (foreign-key cascades; spec §3.1 rule 3). Refused while another recipient is hosted by it or
 * delegates through it: removing it would leave that recipient pointing at nothing.
 */
export async function deleteRecipient(context: ServiceContext, options: { envelopeId: string; recipientId: string }): Promise<void> {
  await changeDraftEnvelope(context, options.envelopeId, async (draft) => {
    const recipient = await findRecipient(draft.em, draft.envelope, options.recipientId);
    await checkRemovable(recipient.id, {
      hostedIds: () => boundRecipientIds(draft.em, recipient, 'hostedBy'),
      delegatingIds: () => boundRecipientIds(draft.em, recipient, 'delegatedBy'),
    });
    await draft.em.nativeDelete(Recipient, { id: recipient.id, envelope: draft.envelope });
    await auditChange(context, draft, {
      envelopeId: draft.envelope.id,
      type: 'recipient.removed',
      details: { recipientId: recipient.id, identifier: recipient.identifier },
    });
  });
}
