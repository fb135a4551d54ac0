import type { RequiredEntityData } from '@mikro-orm/core';
import { InvalidRequestError, type ValidationIssue } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { ensureCapacity } from '../capacity.ts';
import { Field } from '../field/field.entity.ts';
import { FieldNotAllowedForRecipientError } from '../field/field.errors.ts';
import { ensureFieldsNotNamed, ensureRecipientOrderKeepsConditions, fieldIdsOfRecipient } from '../field/field.service.ts';
import { ensureOrderOpen, ensureRecipientsOpen, retireAgents } from '../owner/correction.ts';
import { type RecipientDataOf, readRecipient } from '../owner/owner.read.ts';
import { type ContentOwner, createInOwner, fieldAssignee, type OwnedRecipient, type OwnerChange, recipientsIn } from '../owner/owner.ts';
import type { OwnerKind, OwnerRef } from '../owner/owner-ref.ts';
import { contentOwner } from '../owner/owners.ts';
import type { ServiceContext } from '../service-context.ts';
import { ensureSignatureLevelOffered } from '../trust/trust-services.ts';
import type { RecipientType, SignatureLevel } from './recipient.entity.ts';
import {
  RecipientDelegatorBoundError,
  RecipientDuplicateIdentifierError,
  RecipientHasFieldsError,
  RecipientHostBoundError,
  RecipientNotFoundError,
  RecipientQuorumExceedsAgentsError,
  RecipientQuorumNotApproverError,
} from './recipient.errors.ts';

/*
 * Recipients of an envelope or a template (an envelope's recipients, a template's roles; owner/
 * owner.ts), one set of rules for both: the owner's capacity, identifiers unique in the owner,
 * distinct default colours, host and delegator links within the owner, type changes and removal
 * refused while something is bound to the recipient. Each owner adds its own keys (an envelope
 * recipient's agents, a template role's pre-assigned person) through its adapter.
 */

/** Distinct, readable on white, cycled by the recipient's position in its owner. */
export const RECIPIENT_COLOR_PALETTE = ['#2563EB', '#DC2626', '#059669', '#D97706', '#7C3AED', '#DB2777', '#0891B2', '#65A30D', '#EA580C', '#4F46E5'];

/**
 * The links between recipients (of an envelope, or roles of a template), checked against the
 * owner's other recipients, which `findSibling` looks up by id within the same owner:
 * an `in_person_signer` must name a `host` of the same owner in `hostedById` (and only it may);
 * `delegatedById` must name another recipient of the same owner.
 */
async function checkRecipientLinks<Sibling extends { id: string; type: RecipientType }>(
  recipient: { id?: string; type: RecipientType; hostedById: string | null; delegatedById: string | null },
  pathPrefix: string,
  findSibling: (id: string) => Promise<Sibling | null>,
  ownerNoun: OwnerKind,
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

/**
 * The rules of a recipient's type change, for envelopes and templates alike: a host that still
 * hosts in-person signers keeps its type (`Recipient.HostRecipientBound`), and a recipient holding
 * fields cannot become a viewer (`Recipient.HasFields`).
 */
async function checkTypeChange(
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
  if (type === 'approver' && recipient.type !== 'approver') {
    const held = await bound.fieldIds();
    if (held.length > 0) throw new FieldNotAllowedForRecipientError({ recipientId: recipient.id, type, fieldIds: held });
  }
}

/**
 * An approver's quorum, for envelopes and templates alike: any other type keeps quorum 1
 * (`Recipient.QuorumNotApprover`), and an approver's may not ask for more distinct agents than the
 * role has (`Recipient.QuorumExceedsAgents`), where the owner knows its agents (an envelope's
 * recipient; a template role's are checked when jumpstart makes the envelope and sends it). A
 * role without agents yet may keep quorum 1: sending refuses a role without agents anyway.
 */
function checkQuorum(type: RecipientType, quorum: number, agentCount: number | null, recipientId?: string) {
  if (type !== 'approver') {
    if (quorum !== 1) throw new RecipientQuorumNotApproverError(type, quorum);
    return;
  }
  if (agentCount !== null && quorum > Math.max(agentCount, 1)) throw new RecipientQuorumExceedsAgentsError({ recipientId, quorum, agentCount });
}

/**
 * The default colour of a new recipient, given the colours the owner's recipients use: the first
 * palette colour none of them uses yet (explicit colours included), so defaults stay distinct
 * after removals; only when the palette is exhausted does it cycle by position.
 */
function firstFreeColor(usedColors: string[]): string {
  const used = new Set(usedColors.map((color) => color.toUpperCase()));
  return RECIPIENT_COLOR_PALETTE.find((color) => !used.has(color.toUpperCase())) ?? RECIPIENT_COLOR_PALETTE[usedColors.length % RECIPIENT_COLOR_PALETTE.length];
}

/** Finds another recipient of the same owner by id (for the links). */
function siblingOf(change: OwnerChange, owner: ContentOwner) {
  return (id: string) => change.em.findOne(owner.recipients.entity, { id, ...recipientsIn(change.scope) });
}

async function ensureIdentifierFree(change: OwnerChange, owner: ContentOwner, identifier: string, exceptId?: string) {
  const existing = await change.em.findOne(owner.recipients.entity, { ...recipientsIn(change.scope), identifier });
  if (existing && existing.id !== exceptId) throw new RecipientDuplicateIdentifierError(identifier, owner.kind);
}

async function findRecipient(change: OwnerChange, owner: ContentOwner, recipientId: string): Promise<OwnedRecipient> {
  if (!isUuid(recipientId)) throw new RecipientNotFoundError(recipientId, owner.kind);
  const recipient = await change.em.findOne(owner.recipients.entity, { id: recipientId, ...recipientsIn(change.scope) });
  if (!recipient) throw new RecipientNotFoundError(recipientId, owner.kind);
  return recipient;
}

async function boundRecipientIds(change: OwnerChange, owner: ContentOwner, recipient: OwnedRecipient, link: 'hostedBy' | 'delegatedBy'): Promise<string[]> {
  const bound = await change.em.find(owner.recipients.entity, { [link]: recipient.id, ...recipientsIn(change.scope) });
  return bound.map((other) => other.id);
}

/**
 * Adds a recipient to an owner (an envelope's recipient with its agents, a template's role with
 * its pre-assignment). Idempotent per `Idempotency-Key`.
 */
export async function addRecipient<K extends OwnerKind>(context: ServiceContext, options: { owner: OwnerRef<K>; input: unknown; idempotencyKey?: string }): Promise<RecipientDataOf[K]> {
  const owner = contentOwner(options.owner.kind);
  const request = owner.recipients.parseNew(options.input);
  const input = request.keys;
  return createInOwner(
    owner,
    context,
    { ownerId: options.owner.id, idempotencyKey: options.idempotencyKey, creation: 'addRecipient', request: { input: options.input } },
    async (change) => {
      const { em } = change;
      const existing = await em.find(owner.recipients.entity, recipientsIn(change.scope));
      ensureCapacity(owner.capacity.owner, { what: 'recipients', limit: owner.capacity.recipients, current: existing.length, adding: 1 });
      await ensureIdentifierFree(change, owner, input.identifier);
      const links = await checkRecipientLinks(
        { type: input.type, hostedById: input.hostedById ?? null, delegatedById: input.delegatedById ?? null },
        'recipient',
        siblingOf(change, owner),
        owner.kind,
      );
      // Correcting a sent envelope: the new turn does not come before one already taken.
      await ensureOrderOpen(change, input.order);
      const extras = await request.resolve(em, change.caller.teamId);
      checkQuorum(input.type, input.quorum, extras.agentCount ? await extras.agentCount(em, null) : null);
      await ensureSignatureLevelOffered(em, change.caller.teamId, {
        type: input.type,
        signatureLevel: input.signatureLevel,
        trustServiceId: input.trustServiceId ?? null,
        path: 'recipient',
      });
      const recipient = em.create(owner.recipients.entity, {
        ...recipientsIn(change.scope),
        identifier: input.identifier,
        roleName: input.roleName,
        type: input.type,
        order: input.order,
        required: input.required,
        quorum: input.quorum,
        signatureLevel: input.signatureLevel,
        trustServiceId: input.trustServiceId ?? null,
        color: input.color ?? firstFreeColor(existing.map((other) => other.color)),
        hostedBy: links.hostedBy,
        delegatedBy: links.delegatedBy,
        ...extras.properties,
      } as RequiredEntityData<OwnedRecipient>);
      em.persist(recipient);
      await extras.write?.(em, recipient);
      await em.flush();
      await owner.audit(context, change, 'recipient.added', {
        recipientId: recipient.id,
        identifier: recipient.identifier,
        type: recipient.type,
        ...extras.details,
      });
      return recipient.id;
    },
    (reading, recipientId) => readRecipient(reading, { owner: options.owner, recipientId }),
  );
}

/**
 * Changes a recipient of an owner; only given keys change (an envelope recipient's `agents`, when
 * given, replace the whole agent list; a role's `userId`, `contactId` or `contactGroupId` replace
 * its pre-assignment). A host that still hosts in-person signers keeps its type.
 */
export async function updateRecipient<K extends OwnerKind>(context: ServiceContext, options: { owner: OwnerRef<K>; recipientId: string; input: unknown }): Promise<RecipientDataOf[K]> {
  const owner = contentOwner(options.owner.kind);
  const request = owner.recipients.parseChange(options.input);
  const input = request.keys;
  await owner.change(context, options.owner.id, async (change) => {
    const { em } = change;
    const recipient = await findRecipient(change, owner, options.recipientId);
    if (request.given.length === 0) return;
    // Correcting a sent envelope: only a recipient that has not acted, not moved before one that has.
    await ensureRecipientsOpen(change, [recipient.id]);
    if (input.order !== undefined && input.order !== recipient.order) await ensureOrderOpen(change, input.order);
    if (input.identifier !== undefined && input.identifier !== recipient.identifier) {
      await ensureIdentifierFree(change, owner, input.identifier, recipient.id);
    }
    const type = input.type ?? recipient.type;
    await checkTypeChange(recipient, type, {
      hostedIds: () => boundRecipientIds(change, owner, recipient, 'hostedBy'),
      fieldIds: async () => (await em.find(Field, fieldAssignee(recipient), { fields: ['id'] })).map((field) => field.id),
    });
    const links = await checkRecipientLinks(
      {
        id: recipient.id,
        type,
        hostedById: input.hostedById !== undefined ? input.hostedById : type === 'in_person_signer' ? (recipient.hostedBy?.id ?? null) : null,
        delegatedById: input.delegatedById !== undefined ? input.delegatedById : (recipient.delegatedBy?.id ?? null),
      },
      'recipient',
      siblingOf(change, owner),
      owner.kind,
    );
    // A condition may name only fields of its own or an earlier recipient (docs/fields.md, Conditions).
    if (input.order !== undefined && input.order !== recipient.order)
      await ensureRecipientOrderKeepsConditions(change, owner.kind, { recipientId: recipient.id, order: input.order, path: 'recipient.order' });
    const extras = await request.resolve(em, change.caller.teamId);
    // A role that stops being an approver drops its quorum unless the request names one.
    const quorum = input.quorum ?? (type === 'approver' ? recipient.quorum : 1);
    checkQuorum(type, quorum, extras.agentCount ? await extras.agentCount(em, recipient) : null, recipient.id);
    // A role that stops being a signer drops its level unless the request names one.
    const signatureLevel = input.signatureLevel ?? (type === 'signer' ? (recipient.signatureLevel as SignatureLevel) : 'simple');
    const trustServiceId = input.trustServiceId !== undefined ? input.trustServiceId : signatureLevel === 'simple' ? null : (recipient.trustServiceId ?? null);
    if (request.given.includes('signatureLevel') || request.given.includes('trustServiceId') || request.given.includes('type'))
      await ensureSignatureLevelOffered(em, change.caller.teamId, { type, signatureLevel, trustServiceId, path: 'recipient' });
    em.assign(recipient, {
      type,
      identifier: input.identifier ?? recipient.identifier,
      roleName: input.roleName ?? recipient.roleName,
      order: input.order ?? recipient.order,
      required: input.required ?? recipient.required,
      quorum,
      signatureLevel,
      trustServiceId,
      color: input.color ?? recipient.color,
      hostedBy: links.hostedBy,
      delegatedBy: links.delegatedBy,
      ...extras.properties,
    });
    // A sent envelope's replaced agents stay on record, revoked, their links dead.
    if (request.given.includes('agents')) await retireAgents(change, recipient.id);
    await extras.write?.(em, recipient);
    await owner.audit(context, change, 'recipient.updated', { recipientId: recipient.id, changed: request.given });
  });
  return readRecipient(context, options);
}

/**
 * The removal rule of a recipient (of an envelope, or a template role): refused while another one
 * is hosted by it (`Recipient.HostRecipientBound`) or delegates through it
 * (`Recipient.DelegatorRecipientBound`), since that one would be left pointing at nothing.
 */
async function checkRemovable(recipientId: string, bound: { hostedIds: () => Promise<string[]>; delegatingIds: () => Promise<string[]> }): Promise<void> {
  const hosted = await bound.hostedIds();
  if (hosted.length > 0) throw new RecipientHostBoundError(recipientId, hosted);
  const delegating = await bound.delegatingIds();
  if (delegating.length > 0) throw new RecipientDelegatorBoundError(recipientId, delegating);
}

/**
 * Removes a recipient from an owner, with its agents and the fields assigned to it (foreign-key
 * cascades; docs/reference/interface-spec.md §3.1 rule 3). Refused while another recipient is hosted by it or delegates
 * through it: removing it would leave that recipient pointing at nothing.
 */
export async function deleteRecipient(context: ServiceContext, options: { owner: OwnerRef; recipientId: string }): Promise<void> {
  const owner = contentOwner(options.owner.kind);
  await owner.change(context, options.owner.id, async (change) => {
    const recipient = await findRecipient(change, owner, options.recipientId);
    await ensureRecipientsOpen(change, [recipient.id]);
    await checkRemovable(recipient.id, {
      hostedIds: () => boundRecipientIds(change, owner, recipient, 'hostedBy'),
      delegatingIds: () => boundRecipientIds(change, owner, recipient, 'delegatedBy'),
    });
    // Its fields go with it: not one another field's formula or conditions name.
    await ensureFieldsNotNamed(change, owner.kind, await fieldIdsOfRecipient(change, recipient.id));
    await change.em.nativeDelete(owner.recipients.entity, { id: recipient.id, ...recipientsIn(change.scope) });
    await owner.audit(context, change, 'recipient.removed', { recipientId: recipient.id, identifier: recipient.identifier });
  });
}
