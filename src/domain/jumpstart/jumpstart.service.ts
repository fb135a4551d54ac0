import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { newId } from '../../shared/ids.ts';
import { ConcurrentModificationError } from '../../shared/normalize-error.ts';
import { CapacityExceededError } from '../capacity.ts';
import { auditChange, inTransaction } from '../change.ts';
import type { Contact } from '../contact/contact.entity.ts';
import { ContactGroupMember } from '../contact/contact-group.entity.ts';
import { Document } from '../document/document.entity.ts';
import { inRolledBackTransaction } from '../dry-run.ts';
import { Envelope } from '../envelope/envelope.entity.ts';
import { type EnvelopeData, type EnvelopeInclude, readEnvelope } from '../envelope/envelope.read.ts';
import { DEFAULT_EXPIRATION_PERIOD_DAYS, envelopeSettings } from '../envelope/envelope.service.ts';
import { Field } from '../field/field.entity.ts';
import { FieldView } from '../field/field-view.entity.ts';
import { answerOf, runIdempotently } from '../idempotency/idempotency.service.ts';
import { Agent, type AgentInfo, type Locale, type PhoneContactMethod } from '../recipient/agent.entity.ts';
import { agentsSchema, MAX_AGENTS_PER_RECIPIENT, type ResolvedAgent, resolveAgentInputs } from '../recipient/agent-input.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import { dryRunOf, type SendDryRun } from '../signing/send.service.ts';
import { Team } from '../team/team.entity.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import type { TeamUser } from '../team/team-user.entity.ts';
import { findVisibleTemplate } from '../template/team-template.ts';
import type { Template } from '../template/template.entity.ts';
import { JumpstartDuplicateRecipientError, JumpstartUnknownRecipientError, TemplateNotReadyError, type TemplateReadinessIssue } from '../template/template.errors.ts';
import { TemplateRecipient } from '../template/template-recipient.entity.ts';
import { parseInput } from '../validation.ts';
import { type DataMerge, mergeDataSchema, mergeTemplateData, missingDataSchema } from './data-merge.ts';

/*
 * Jumpstart (docs/reference/interface-spec.md §4.5): a draft envelope made from a template in one request and one
 * transaction, with copies of the template's documents (the same stored blobs), roles and fields,
 * every id new and every reference remapped, and people taken from the request or the template.
 * A folder of its own, above both: it reads templates and writes envelopes, documents, recipients
 * and fields, and none of those imports it (bulk send does, to make each row's envelope).
 */

const jumpstartEntry = z
  .strictObject({
    identifier: z.string({ error: 'must be a role identifier of the template' }).optional(),
    id: z.string({ error: 'must be a role id of the template' }).optional(),
    agents: agentsSchema.default([]),
  })
  .superRefine((entry, check) => {
    if ((entry.identifier === undefined) === (entry.id === undefined)) {
      check.addIssue({ code: 'custom', path: [], message: 'must name the role by exactly one of identifier or id' });
    }
  });

export const jumpstartInput = z.strictObject({
  name: envelopeSettings.name.optional(),
  expirationPeriodDays: envelopeSettings.expirationPeriodDays.default(DEFAULT_EXPIRATION_PERIOD_DAYS),
  reminderInitialDelayDays: envelopeSettings.reminderInitialDelayDays.default(0),
  reminderRepeatIntervalDays: envelopeSettings.reminderRepeatIntervalDays.default(0),
  reminderBeforeExpirationDays: envelopeSettings.reminderBeforeExpirationDays.default(0),
  context: envelopeSettings.context.default({}),
  // A template has at most 50 roles, so a longer list names a role twice or one that is not there.
  recipients: z.array(jumpstartEntry).max(50, 'at most 50 entries, one per role of the template').default([]),
  /** Values for the template's data tags (README "Data merge"; jumpstart/data-merge.ts). */
  data: mergeDataSchema.optional(),
  /** `refuse` (default): a tag whose path `data` lacks refuses the jumpstart; `blank`: it is left blank. */
  missingData: missingDataSchema,
});

export type JumpstartInput = z.output<typeof jumpstartInput>;
export type JumpstartEntry = z.output<typeof jumpstartEntry>;

/** Everything a new envelope's answer can show (as `createEnvelope` answers), stored with an Idempotency-Key. */
export const JUMPSTARTED_ENVELOPE_INCLUDE: EnvelopeInclude = { documents: true, recipients: true, agents: true, fields: true, views: true, auditEvents: true, progress: true };

export type TemplateContent = {
  documents: Document[];
  roles: TemplateRecipient[];
  fields: Field[];
  views: FieldView[];
};

export async function loadTemplateContent(em: EntityManager, template: Template): Promise<TemplateContent> {
  const [documents, roles, fields, views] = await Promise.all([
    em.find(Document, { template }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' } }),
    em.find(TemplateRecipient, { template }, { orderBy: { order: 'asc', createdAt: 'asc', id: 'asc' } }),
    em.find(Field, { template }, { orderBy: { createdAt: 'asc', identifier: 'asc' } }),
    em.find(FieldView, { field: { template } }, { orderBy: { position: 'asc' } }),
  ]);
  return { documents, roles, fields, views };
}

/**
 * The interface spec (docs/reference/interface-spec.md) §4.7 rule 3: a template needs a document, roles, and fields placed on its documents and
 * assigned to its roles. A template field always has both (a field keeps at least one view, and
 * the database requires its role), so "no field" is the one field problem to report.
 */
export function readinessIssues(content: TemplateContent): TemplateReadinessIssue[] {
  const issues: TemplateReadinessIssue[] = [];
  if (content.documents.length === 0) issues.push({ path: 'documents', message: 'the template has no document' });
  if (content.roles.length === 0) issues.push({ path: 'recipients', message: 'the template has no recipient role' });
  if (content.fields.length === 0) issues.push({ path: 'fields', message: 'the template has no field placed on a document and assigned to a role' });
  return issues;
}

/**
 * Which entry of the request gives each role its people, by `identifier` (exact) or by `id`.
 * Every entry naming no role, then every role named twice, is refused by name with all such
 * entries listed.
 */
export function matchEntries(roles: TemplateRecipient[], entries: JumpstartEntry[]): Map<string, { entry: JumpstartEntry; index: number }> {
  const byIdentifier = new Map(roles.map((role) => [role.identifier, role]));
  const byId = new Map(roles.map((role) => [role.id, role]));
  const matched = new Map<string, { entry: JumpstartEntry; index: number }>();
  const unknown: { path: string; identifier?: string; id?: string }[] = [];
  const duplicates: { path: string; recipientId: string; identifier: string }[] = [];
  entries.forEach((entry, index) => {
    const path = `recipients[${index}]`;
    const role = entry.identifier !== undefined ? byIdentifier.get(entry.identifier) : byId.get(entry.id!.toLowerCase());
    if (!role) {
      unknown.push(entry.identifier !== undefined ? { path, identifier: entry.identifier } : { path, id: entry.id });
      return;
    }
    const earlier = matched.get(role.id);
    if (earlier) {
      if (!duplicates.some((duplicate) => duplicate.path === `recipients[${earlier.index}]`)) {
        duplicates.push({ path: `recipients[${earlier.index}]`, recipientId: role.id, identifier: role.identifier });
      }
      duplicates.push({ path, recipientId: role.id, identifier: role.identifier });
      return;
    }
    matched.set(role.id, { entry, index });
  });
  if (unknown.length > 0) throw new JumpstartUnknownRecipientError(unknown);
  if (duplicates.length > 0) throw new JumpstartDuplicateRecipientError(duplicates);
  return matched;
}

function infoOfContact(contact: Contact): AgentInfo {
  return {
    name: contact.name,
    email: contact.email ?? null,
    phone: contact.phone ?? null,
    locale: (contact.locale as Locale | null | undefined) ?? null,
    phoneContactMethod: (contact.phoneContactMethod as PhoneContactMethod | null | undefined) ?? null,
  };
}

function infoOfUser(user: TeamUser): AgentInfo {
  return { name: user.name, email: user.email, phone: user.phone ?? null, locale: user.locale as Locale, phoneContactMethod: null };
}

const asInfo = (info: AgentInfo): ResolvedAgent => ({ kind: 'info', info, contact: null, group: null, user: null });

/**
 * The people a role's pre-assignment gives. A contact group gives each member, oldest membership
 * first. For the owning team they stay references (resolved and snapshotted at send, like any
 * agent reference); for a team the template is shared with, the owner's address book is not
 * theirs to reference, so the people are copied inline as they are now.
 */
async function preAssignedAgents(em: EntityManager, role: TemplateRecipient, byOwner: boolean): Promise<ResolvedAgent[]> {
  if (role.user) {
    const user = await role.user.load();
    if (!user) return [];
    return [byOwner ? { kind: 'user', info: null, contact: null, group: null, user } : asInfo(infoOfUser(user))];
  }
  if (role.contact) {
    const contact = await role.contact.load();
    if (!contact) return [];
    return [byOwner ? { kind: 'contact', info: null, contact, group: null, user: null } : asInfo(infoOfContact(contact))];
  }
  if (role.contactGroup) {
    const members = await em.find(ContactGroupMember, { group: role.contactGroup.id }, { populate: ['contact'], orderBy: { createdAt: 'asc', contact: 'asc' } });
    if (members.length > MAX_AGENTS_PER_RECIPIENT) {
      throw new CapacityExceededError('Envelope', {
        what: `agents per recipient (role "${role.identifier}" is pre-assigned a group)`,
        limit: MAX_AGENTS_PER_RECIPIENT,
        current: 0,
        adding: members.length,
      });
    }
    return members.map((member) => {
      const contact = member.contact.getEntity();
      return byOwner ? { kind: 'contact' as const, info: null, contact, group: null, user: null } : asInfo(infoOfContact(contact));
    });
  }
  return [];
}

/**
 * The agents of a role: a fixed role always gets the template's person and ignores its entry; a
 * variable role gets its entry's agents (checked against the caller's team, as for any recipient)
 * or, when it has no entry or an entry without agents, the template's person. A role may end up
 * with nobody: allowed in a draft, refused at send.
 */
async function agentsFor(
  em: EntityManager,
  caller: TeamCaller,
  slot: { template: Template; role: TemplateRecipient; matched: { entry: JumpstartEntry; index: number } | undefined },
): Promise<ResolvedAgent[]> {
  const { template, role, matched } = slot;
  if (!role.fixed && matched && matched.entry.agents.length > 0) {
    return resolveAgentInputs(em, caller.teamId, matched.entry.agents, `recipients[${matched.index}].agents`);
  }
  return preAssignedAgents(em, role, template.team.id === caller.teamId);
}

/**
 * What a caller beyond the jumpstart request adds to a copy (a bulk send's row): field values
 * to prefill, by field identifier, already checked against each field's type and config (a
 * field keeps the template's `readonly`, so a value is fixed or a default the signer may change),
 * and details for the `envelope.created` event (the bulk send that made it).
 */
export type CopyExtras = { values?: Record<string, Record<string, unknown>>; auditDetails?: Record<string, unknown>; merged?: DataMerge };

/**
 * Writes the envelope and the copies in the caller's transaction (`em`); answers the new
 * envelope's id. The one code path of a jumpstart, also taken by each row of a bulk send.
 */
export async function copyTemplate(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'metadata'>,
  copy: { em: EntityManager; caller: TeamCaller; templateId: string; input: JumpstartInput; extras?: CopyExtras },
): Promise<string> {
  const source = await lockTemplateForCopies(copy.em, copy.caller, copy.templateId);
  const [written] = await writeCopies(context, { em: copy.em, caller: copy.caller, source, copies: [{ input: copy.input, extras: copy.extras }] });
  return written!.envelope.id;
}

/** A template as copies are made from it: read once under its share lock, in the copies' transaction. */
export type CopySource = { template: Template; content: TemplateContent };

/**
 * The template, locked for copying and read, in the caller's transaction. A share lock: a change
 * to the template waits for the copies (and they for it), so every envelope the transaction makes
 * is made from one consistent state of the template. Refused when it is not ready to be copied.
 */
export async function lockTemplateForCopies(em: EntityManager, caller: TeamCaller, templateId: string): Promise<CopySource> {
  const template = await findVisibleTemplate(em, caller, templateId, { lock: 'share' });
  const content = await loadTemplateContent(em, template);
  const issues = readinessIssues(content);
  if (issues.length > 0) throw new TemplateNotReadyError(template.id, issues);
  return { template, content };
}

/** What one copy wrote: the draft and its rows, as a send of it in the same transaction takes them. */
export type WrittenCopy = { envelope: Envelope; documents: Document[]; recipients: Recipient[]; agents: Agent[]; fields: Field[]; views: FieldView[] };

/** One copy to make from a locked template: the request's input and what its caller adds. */
export type CopyRequest = { input: JumpstartInput; extras?: CopyExtras };

/** A copy made in memory (buildCopy): its rows, written by the transaction's next flush, and its `envelope.created` details. */
type BuiltCopy = { written: WrittenCopy; createdDetails: Record<string, unknown>; now: Date };

/**
 * Copies of one template its transaction locked and read (lockTemplateForCopies), in the caller's
 * transaction, in the order asked (a jumpstart's one, a bulk send's step's several, reading the
 * template once): each made in memory by the one code path (buildCopy), then ALL written by one flush
 * (one multi-row insert per table for the whole step, not one per copy), then each copy's
 * `envelope.created` recorded. A refusal of any copy throws before anything is written.
 */
export async function writeCopies(
  context: Pick<ServiceContext, 'clock' | 'auditKey' | 'metadata'>,
  work: { em: EntityManager; caller: TeamCaller; source: CopySource; copies: CopyRequest[] },
): Promise<WrittenCopy[]> {
  const { em, caller, source } = work;
  const built: BuiltCopy[] = [];
  for (const copy of work.copies) built.push(await buildCopy(context, { em, caller, source, ...copy }));
  await em.flush();
  for (const { written, createdDetails, now } of built) {
    await auditChange(
      context,
      { em, caller, now },
      // The envelope is new in this transaction: its chain begins here, with nothing to lock or read.
      { envelopeId: written.envelope.id, type: 'envelope.created', newStream: true, details: createdDetails },
    );
  }
  return built.map(({ written }) => written);
}

/**
 * One copy's rows created in the transaction's entity manager, not flushed: the envelope, its
 * documents (the same stored originals, or the copies its data was merged into), recipients,
 * agents, fields and their views, and what its `envelope.created` event says. The reads it makes
 * (contacts, groups, users an agent names) touch none of these tables, so nothing is flushed early.
 */
async function buildCopy(context: Pick<ServiceContext, 'clock'>, copy: { em: EntityManager; caller: TeamCaller; source: CopySource } & CopyRequest): Promise<BuiltCopy> {
  const { em, caller, input, extras = {} } = copy;
  const { template, content } = copy.source;
  const matched = matchEntries(content.roles, input.recipients);
  const now = context.clock.now();

  // The merge was done on the documents as read before this transaction: they must still be those.
  for (const document of content.documents) {
    const merged = extras.merged?.documents.get(document.id);
    if (merged !== undefined && merged.sha256Before !== document.contentSha256) throw new ConcurrentModificationError();
  }
  const { recipients: _entries, name, data: _data, missingData: _missingData, ...settings } = input;
  const envelope = em.create(Envelope, {
    id: newId(),
    ...settings,
    name: name ?? template.name,
    team: em.getReference(Team, caller.teamId),
    template,
    status: 'draft',
    createdAt: now,
    updatedAt: now,
  });
  // The same stored original for every copy (only the row is new), or the copy its data was merged into.
  const documents = new Map(
    content.documents.map((document) => {
      const merged = extras.merged?.documents.get(document.id);
      return [
        document.id,
        em.create(Document, {
          id: newId(),
          envelope,
          template: null,
          name: document.name,
          order: document.order,
          context: document.context,
          status: null,
          pageCount: document.pageCount,
          pages: document.pages,
          contentSha256: merged?.sha256After ?? document.contentSha256,
          byteSize: merged?.byteSize ?? document.byteSize,
          createdAt: now,
          updatedAt: now,
        }),
      ] as const;
    }),
  );
  const createdDetails = {
    name: envelope.name,
    templateId: template.id,
    documents: content.documents.length,
    recipients: content.roles.length,
    fields: content.fields.length,
    ...extras.auditDetails,
    // What data made the documents: its hash, and each merged document's hash before and after.
    ...(extras.merged
      ? {
          dataMerge: {
            dataSha256: extras.merged.dataSha256,
            documents: content.documents
              .filter((document) => extras.merged!.documents.has(document.id))
              .map((document) => {
                const merged = extras.merged!.documents.get(document.id)!;
                return { documentId: documents.get(document.id)!.id, name: document.name, sha256Before: merged.sha256Before, sha256After: merged.sha256After, tags: merged.tags };
              }),
          },
        }
      : {}),
  };

  const recipients = new Map<string, Recipient>();
  const createdAgents: Agent[] = [];
  for (const role of content.roles) {
    recipients.set(
      role.id,
      em.create(Recipient, {
        id: newId(),
        envelope,
        identifier: role.identifier,
        roleName: role.roleName,
        type: role.type,
        order: role.order,
        required: role.required,
        quorum: role.quorum,
        signatureLevel: role.signatureLevel,
        trustServiceId: role.trustServiceId,
        color: role.color,
        createdAt: now,
        updatedAt: now,
      }),
    );
  }
  for (const role of content.roles) {
    const recipient = recipients.get(role.id)!;
    em.assign(recipient, {
      hostedBy: role.hostedBy ? recipients.get(role.hostedBy.id)! : null,
      delegatedBy: role.delegatedBy ? recipients.get(role.delegatedBy.id)! : null,
    });
    const agents = await agentsFor(em, caller, { template, role, matched: matched.get(role.id) });
    agents.forEach((agent, position) => createdAgents.push(em.create(Agent, { recipient, position, ...agent })));
  }

  const fields = new Map<string, Field>();
  for (const field of content.fields) {
    fields.set(
      field.id,
      em.create(Field, {
        id: newId(),
        envelope,
        template: null,
        recipient: recipients.get(field.templateRecipient!.id)!,
        templateRecipient: null,
        identifier: field.identifier,
        type: field.type,
        label: field.label ?? null,
        tooltip: field.tooltip ?? null,
        required: field.required,
        readonly: field.readonly,
        value: extras.values?.[field.identifier] ?? field.value ?? null,
        config: field.config,
        visibleWhen: field.visibleWhen ?? null,
        createdAt: now,
        updatedAt: now,
      }),
    );
  }
  const views: FieldView[] = [];
  for (const view of content.views) {
    views.push(
      em.create(FieldView, {
        field: fields.get(view.field.id)!,
        document: documents.get(view.document.id)!,
        position: view.position,
        page: view.page,
        x: view.x,
        y: view.y,
        width: view.width,
        height: view.height,
      }),
    );
  }
  // In the order the send reads them back (sendProblems), so a send from these checks exactly as one after a read.
  const byOrder = <T extends { order: number; createdAt: Date; id: string }>(a: T, b: T) =>
    a.order - b.order || a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const written: WrittenCopy = {
    envelope,
    documents: [...documents.values()].sort(byOrder),
    recipients: [...recipients.values()].sort(byOrder),
    agents: createdAgents.sort((a, b) => a.position - b.position),
    fields: [...fields.values()].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.identifier < b.identifier ? -1 : a.identifier > b.identifier ? 1 : 0)),
    views: views.sort((a, b) => a.position - b.position),
  };
  return { written, createdDetails, now };
}

/**
 * Creates a draft envelope from a template the caller's team may use (its own or one shared with
 * it), all in one transaction: a failure anywhere leaves nothing behind. `name` defaults to the
 * template's; the settings are a new envelope's. Idempotent per `Idempotency-Key`: a repeat
 * answers the stored first answer, even after the template or the envelope changed.
 */
export async function jumpstartEnvelope(context: ServiceContext, options: { templateId: string; input: unknown; idempotencyKey?: string }): Promise<EnvelopeData> {
  const input = parseInput(jumpstartInput, options.input);
  const caller = await context.caller();
  // Before the transaction: reading and drawing PDFs takes seconds, and holds no lock meanwhile.
  // A refusal waits for the idempotency check: a repeat answers its first answer even when the
  // template has changed (or gone) since, as it always did.
  let merged: DataMerge | undefined;
  let mergeRefusal: { error: unknown } | undefined;
  try {
    merged = await mergeTemplateData(context, { caller, templateId: options.templateId }, { data: input.data as Record<string, unknown> | undefined, missingData: input.missingData });
  } catch (error) {
    if (options.idempotencyKey === undefined) throw error;
    mergeRefusal = { error };
  }
  const outcome = await context.em.transactional((em) =>
    runIdempotently(
      em,
      {
        teamId: caller.teamId,
        key: options.idempotencyKey,
        fingerprintOf: { operation: 'jumpstartEnvelope', templateId: options.templateId.toLowerCase(), input: options.input },
      },
      {
        perform: () => {
          if (mergeRefusal !== undefined) throw mergeRefusal.error;
          return copyTemplate(context, { em, caller, templateId: options.templateId, input, ...(merged ? { extras: { merged } } : {}) });
        },
        answer: (envelopeId) => readEnvelope(inTransaction(context, em), envelopeId, JUMPSTARTED_ENVELOPE_INCLUDE),
      },
    ),
  );
  return answerOf(outcome, (envelopeId) => readEnvelope(context, envelopeId, JUMPSTARTED_ENVELOPE_INCLUDE));
}

/** A jumpstart's dry run: the envelope it would make (as the caller's face reads an envelope), and what sending it would do. */
export type JumpstartDryRun<T> = SendDryRun & { envelope: T };

/**
 * `POST /envelopes/jumpstart/{templateId}?dryRun=true`, `jumpstartEnvelope(dryRun: true)`: the
 * jumpstart's own code path (copyTemplate) run in a transaction that is rolled back, so the
 * answer is exactly the envelope a jumpstart would make now (its ids exist nowhere), read by
 * `read` inside that transaction (each face reads an envelope its own way), with the send's dry
 * run of it. Nothing is written (no row, no audit event; documents are references to the
 * template's stored blobs, so nothing is stored either). Refused as the jumpstart would be. Not
 * idempotent by key: nothing is made, so there is nothing to answer again.
 */
export async function dryRunJumpstart<T>(
  context: ServiceContext,
  options: { templateId: string; input: unknown; read: (context: ServiceContext, envelopeId: string) => Promise<T> },
): Promise<JumpstartDryRun<T>> {
  const input = parseInput(jumpstartInput, options.input);
  const caller = await context.caller();
  // Checked as the jumpstart checks it (every missing path), nothing drawn or stored.
  await mergeTemplateData(context, { caller, templateId: options.templateId }, { data: input.data as Record<string, unknown> | undefined, missingData: input.missingData }, { draw: false });
  return inRolledBackTransaction(context.em, async (em) => {
    const envelopeId = await copyTemplate(context, { em, caller, templateId: options.templateId, input });
    const envelope = await options.read(inTransaction(context, em), envelopeId);
    const send = await dryRunOf(em, await em.findOneOrFail(Envelope, { id: envelopeId }), context.clock.now());
    return { ...send, envelope };
  });
}
