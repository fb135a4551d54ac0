/*
 * The owner adapter: what documents, recipients and fields need to know of whoever holds them, an
 * envelope or a template. Their rules are written once (document/document.service.ts,
 * recipient/recipient.service.ts, field/field.service.ts) against this; each owner supplies its
 * own (envelope-owner.ts, template-owner.ts): how to reach and lock it (its
 * tenant gate; a draft edit for an envelope, the owning team's write lock for a template), what
 * it may hold, where its changes are audited, and its recipients' table and own keys. NotFound
 * errors name the owner by its kind. `contentOwner` (owners.ts) picks the adapter of an OwnerRef.
 */
import type { EntityClass, ObjectQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { type ChangeScope, inTransaction } from '../change.ts';
import type { Envelope } from '../envelope/envelope.entity.ts';
import { createIdempotentlyUnderLock } from '../idempotency/idempotency.service.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { NewRecipientKeys, RecipientKeyChange } from '../recipient/recipient-keys.ts';
import type { ServiceContext } from '../service-context.ts';
import type { Template } from '../template/template.entity.ts';
import type { TemplateRecipient } from '../template/template-recipient.entity.ts';
import type { EnvelopeCorrection } from './correction.ts';
import type { OwnerKind } from './owner-ref.ts';

/** The filter of an owner's documents, recipients and fields (the ORM property naming the owner). */
export type OwnerScope = { envelope: Envelope } | { template: Template };

/** A recipient of an owner: an envelope's recipient or a template's role (two tables, the same rules). */
export type OwnedRecipient = Recipient | TemplateRecipient;

/**
 * A change inside an owner, in progress under the owner's lock. `correction`: the owner is a sent
 * envelope being corrected (owner/correction.ts); absent for a draft or a template.
 */
export type OwnerChange = ChangeScope & { ownerId: string; scope: OwnerScope; correction?: EnvelopeCorrection };

/** The creations that are idempotent per `Idempotency-Key`, by the name an envelope gives them. */
export type ContentCreation = 'addDocument' | 'addRecipient' | 'createFields';

export type ContentOwner = {
  kind: OwnerKind;
  /** What one owner may hold, and the name its `*.CapacityExceeded` carries. */
  capacity: { owner: 'Envelope' | 'Template'; documents: number; recipients: number; fields: number; views: number };
  /**
   * Runs a change in one transaction that holds the owner's lock, found through its tenant gate
   * (its NotFound otherwise) and changeable by the caller (an envelope while a draft, or
   * corrected while sent, owner/correction.ts; a template only by its owning team).
   */
  change<T>(context: ServiceContext, ownerId: string, work: (change: OwnerChange) => Promise<T>): Promise<T>;
  /** The name each creation carries in its idempotency fingerprint (with the owner's id as `<kind>Id`). */
  creations: Record<ContentCreation, string>;
  /** Records a change in the owner's audit trail (in its transaction). */
  audit(context: ServiceContext, change: OwnerChange, type: string, details: Record<string, unknown>): Promise<unknown>;
  /**
   * The cheap check an upload passes before any of its bytes are read (one read, no lock): the
   * caller may change the owner. The full check runs again under the lock when the document is added.
   */
  checkUploadTarget(context: ServiceContext, ownerId: string, idempotencyKey: string | undefined): Promise<void>;
  /** Its recipients: their entity, and the owner's own keys beyond the shared ones. */
  recipients: OwnerRecipients;
};

/**
 * An owner's recipients (an envelope's recipients, a template's roles): their entity, and how a
 * request's body is parsed (`Request.Invalid` otherwise) into the keys both owners share plus the
 * owner's own (an envelope recipient's agents; a template role's `fixed` and pre-assigned person).
 */
export type OwnerRecipients<R extends OwnedRecipient = OwnedRecipient> = {
  entity: EntityClass<R>;
  parseNew(body: unknown): RecipientRequest<NewRecipientKeys, R>;
  parseChange(body: unknown): RecipientRequest<RecipientKeyChange, R>;
};

/** A recipient request parsed by its owner's rules. */
export type RecipientRequest<Keys, R extends OwnedRecipient = OwnedRecipient> = {
  /** The keys both owners' recipients share, as given. */
  keys: Keys;
  /** Every key given, the owner's own included (what `recipient.updated` records as changed). */
  given: string[];
  /** Resolves the owner's own keys against the caller's team, in the change's transaction. */
  resolve(em: EntityManager, teamId: string): Promise<RecipientExtras<R>>;
};

/** The owner's own keys of a recipient, resolved. */
export type RecipientExtras<R extends OwnedRecipient = OwnedRecipient> = {
  /** Entity properties beyond the shared ones. */
  properties: Record<string, unknown>;
  /** What to write once the recipient's row is in the unit of work (an envelope recipient's agents). */
  write?(em: EntityManager, recipient: R): Promise<void>;
  /** What `recipient.added` records beyond the shared keys. */
  details: Record<string, unknown>;
  /**
   * How many agents the recipient has after this request, where the owner holds agents (an
   * envelope's recipient; a template role gets its people at jumpstart): an approver's quorum is
   * checked against it.
   */
  agentCount?(em: EntityManager, recipient: R | null): Promise<number>;
};

/** A change of the owner `scope` names, from the owner's own change (its transaction, caller and clock). */
export function ownerChange(change: ChangeScope, scope: OwnerScope, correction?: EnvelopeCorrection): OwnerChange {
  return { em: change.em, caller: change.caller, now: change.now, ownerId: 'envelope' in scope ? scope.envelope.id : scope.template.id, scope, ...(correction ? { correction } : {}) };
}

/** The owner properties of a new document or field row: exactly one owner is set. */
export function ownerColumns(scope: OwnerScope): { envelope: Envelope; template: null } | { envelope: null; template: Template } {
  return 'envelope' in scope ? { envelope: scope.envelope, template: null } : { envelope: null, template: scope.template };
}

/**
 * The filter of an owner's rows of an entity that differs by owner (its recipients): the scope's
 * one key is a property of that owner's entity, which the union type cannot see.
 */
export function recipientsIn(scope: OwnerScope): ObjectQuery<OwnedRecipient> {
  return scope as ObjectQuery<OwnedRecipient>;
}

/** The Field properties that name a field's recipient: an envelope's recipient or a template's role (exactly one is set). */
export function fieldAssignee(recipient: OwnedRecipient): { recipient: Recipient; templateRecipient: null } | { recipient: null; templateRecipient: TemplateRecipient } {
  return recipient instanceof Recipient ? { recipient, templateRecipient: null } : { recipient: null, templateRecipient: recipient };
}

/**
 * Creates something inside an owner (a document, a recipient, fields), idempotent per
 * `Idempotency-Key`: a repeat of a completed request answers the stored first answer, even if the
 * owner has changed since (an envelope left draft; the created thing was changed or deleted);
 * otherwise `create` runs as a change under the owner's lock, and `read` reads its answer in the
 * same transaction, which is stored with the key. `request` is what makes two requests "the
 * same" (the body); the creation's name and the owner id are added here.
 */
export async function createInOwner<T>(
  owner: ContentOwner,
  context: ServiceContext,
  options: { ownerId: string; idempotencyKey: string | undefined; creation: ContentCreation; request: Record<string, unknown> },
  create: (change: OwnerChange) => Promise<string>,
  read: (context: ServiceContext, resourceId: string) => Promise<T>,
): Promise<T> {
  const caller = await context.caller();
  const fingerprintOf = { operation: owner.creations[options.creation], ...options.request, [`${owner.kind}Id`]: options.ownerId.toLowerCase() };
  return createIdempotentlyUnderLock<T, OwnerChange>(
    {
      em: context.em,
      request: { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf },
      underLock: (work) => owner.change(context, options.ownerId, work),
    },
    create,
    (em, resourceId) => read(inTransaction(context, em), resourceId),
    (resourceId) => read(context, resourceId),
  );
}
