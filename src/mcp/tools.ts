/**
 * The MCP face's tools: each a thin call of one public operation through the domain service the
 * REST handler of the same operation calls (the routes are named in each description), with the
 * caller's request context, so a tool can do exactly what the team's key can do over REST and
 * nothing more. Rules, validation and tenancy stay in the domain: a tool only names its
 * arguments, hands the operation's input over as it came, and answers the domain's data.
 *
 * What no tool offers, on purpose: a recipient's signing link (POST …/signing-url) or anything a
 * signing link could be derived from, the sandbox clock, and file bytes (download_links answers
 * short-lived signed URLs instead).
 */
import { z } from 'zod';
import type { RequestContext } from '../context.ts';
import { issueDownloadLinks } from '../domain/artefact/download.service.ts';
import { envelopeStatuses } from '../domain/envelope/envelope.entity.ts';
import { readEnvelope, readEnvelopePage } from '../domain/envelope/envelope.read.ts';
import { verifyEnvelopeAuditChain } from '../domain/envelope/envelope-audit-chain.ts';
import { dryRunJumpstart, jumpstartEnvelope, jumpstartInput } from '../domain/jumpstart/jumpstart.service.ts';
import type { ServiceContext } from '../domain/service-context.ts';
import { voidEnvelope, voidInput } from '../domain/signing/closing.service.ts';
import { remindEnvelope } from '../domain/signing/nudge.service.ts';
import { dryRunSend, sendEnvelope, sendInput } from '../domain/signing/send.service.ts';
import { readTemplatePage, type TemplateInclude } from '../domain/template/template.read.ts';

/** What a tool promises about its effects (MCP tool annotations), read by clients to ask before acting. */
export type ToolAnnotations = { readOnlyHint: boolean; destructiveHint: boolean; idempotentHint: boolean; openWorldHint: boolean };

export type McpTool = {
  name: string;
  title: string;
  description: string;
  /** The arguments; listed to clients as JSON Schema, checked before `run` (`Request.Invalid` with every issue). */
  input: z.ZodObject;
  annotations: ToolAnnotations;
  run(context: RequestContext, args: Record<string, unknown>): Promise<Record<string, unknown>>;
};

const READ: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };

const envelopeId = z.string().describe('The envelope’s id (a UUID), as list_envelopes or create_envelope_from_template answered it.');

/** Roles and documents, not field placements: what a model needs to fill a jumpstart. */
const TEMPLATE_LISTING: TemplateInclude = { documents: true, recipients: true };

/** The envelope with what a model reads to tell where it stands. */
const ENVELOPE_READ = { documents: true, recipients: true, agents: true, progress: true } as const;

/** The arguments that are the tool's own, not the operation's body. */
function without(args: Record<string, unknown>, ...names: string[]): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(args)) if (!names.includes(name)) body[name] = value;
  return body;
}

export const MCP_TOOLS: McpTool[] = [
  {
    name: 'list_templates',
    title: 'List templates',
    description:
      'Lists the templates your team may use (its own and those shared with it), newest first, each with its documents and recipient roles. ' +
      'A role’s `identifier` is what create_envelope_from_template’s `recipients[].identifier` names; `fixed` roles take their pre-assigned person. ' +
      'Pass `nextCursor` back as `cursor` for the next page (REST: GET /templates).',
    input: z.strictObject({
      limit: z.number().int().min(1).max(100).optional().describe('At most this many templates (1–100, default 20).'),
      cursor: z.string().optional().describe('The previous page’s nextCursor.'),
    }),
    annotations: READ,
    run: (context, args) => readTemplatePage(context, { limit: args.limit as number | undefined, cursor: args.cursor as string | undefined }, TEMPLATE_LISTING),
  },
  {
    name: 'list_envelopes',
    title: 'Find envelopes',
    description:
      'Lists your team’s envelopes, newest first; every filter given narrows the list (they combine with "and"). Each envelope carries `progress`: ' +
      'how many acting roles there are, how many completed, and (while sent) `waitingFor`, whose turn it is. Pass `nextCursor` back as `cursor` for more ' +
      '(REST: GET /envelopes).',
    input: z.strictObject({
      q: z.string().optional().describe('The name contains this (letter case and accents ignored).'),
      status: z.array(z.enum(envelopeStatuses)).optional().describe('Any of these statuses.'),
      recipientEmail: z.string().optional().describe('A person of the envelope has this email address.'),
      templateId: z.string().optional().describe('Made from this template.'),
      createdAfter: z.string().optional().describe('Created at or after this ISO 8601 instant with a zone (2026-01-31T00:00:00Z).'),
      createdBefore: z.string().optional().describe('Created before this instant.'),
      completedAfter: z.string().optional().describe('Finalized at or after this instant.'),
      completedBefore: z.string().optional().describe('Finalized before this instant.'),
      context: z.record(z.string(), z.string()).optional().describe('The envelope’s context has exactly these string values at these keys ({"dealId":"D-1"}); up to 10.'),
      limit: z.number().int().min(1).max(100).optional().describe('At most this many envelopes (1–100, default 20).'),
      cursor: z.string().optional().describe('The previous page’s nextCursor.'),
    }),
    annotations: READ,
    run: (context, args) => readEnvelopePage(context, args, { progress: true }),
  },
  {
    name: 'get_envelope',
    title: 'Read an envelope',
    description:
      'Reads one envelope of your team: its status (draft, scheduled, sent, finalized, voided, expired), dates, documents, recipient roles with their people, ' +
      'and `progress` (completed and pending roles, whose turn it is). `includeFields` adds the fields and their placements (REST: GET /envelopes/{id}).',
    input: z.strictObject({
      envelopeId,
      includeFields: z.boolean().optional().describe('Also answer the fields with their values and placements (larger).'),
    }),
    annotations: READ,
    async run(context, args) {
      const envelope = await readEnvelope(context, String(args.envelopeId), { ...ENVELOPE_READ, fields: args.includeFields === true, views: args.includeFields === true });
      return { envelope };
    },
  },
  {
    name: 'create_envelope_from_template',
    title: 'Create an envelope from a template',
    description:
      'Makes a draft envelope from a template in one step (a jumpstart), giving each recipient role its people: ' +
      '`recipients: [{ identifier: "<role identifier from list_templates>", agents: [{ info: { name, email } }] }]`. Nothing is sent: call send_envelope next. ' +
      'With `dryRun: true` nothing is made and the answer shows the envelope it would make and what sending it would do (`wouldSend`, `problems`, `plan`): ' +
      'use it to check the people before creating. `idempotencyKey` makes a retry answer the first envelope instead of making a second one ' +
      '(REST: POST /envelopes/jumpstart/{templateId}).',
    input: jumpstartInput.extend({
      templateId: z.string().describe('The template’s id, from list_templates.'),
      dryRun: z.boolean().optional().describe('true: check and preview only; nothing is made.'),
      idempotencyKey: z.string().min(1).max(255).optional().describe('Any unique text; the same key within 24 hours answers the same envelope.'),
      recipients: jumpstartInput.shape.recipients.describe(
        'One entry per role to fill: `identifier` (or `id`) names the role, `agents` the people, each `{ info: { name, email?, phone?, locale? } }` or `{ contactId }`. A role left out takes its pre-assigned person.',
      ),
      name: jumpstartInput.shape.name.describe('The envelope’s name (default: the template’s).'),
    }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    async run(context, args) {
      const templateId = String(args.templateId);
      const input = without(args, 'templateId', 'dryRun', 'idempotencyKey');
      if (args.dryRun === true) {
        const read = (inside: ServiceContext, id: string) => readEnvelope(inside, id, { ...ENVELOPE_READ, fields: true, views: true });
        return { dryRun: await dryRunJumpstart(context, { templateId, input, read }) };
      }
      const envelope = await jumpstartEnvelope(context, { templateId, input, idempotencyKey: args.idempotencyKey as string | undefined });
      return { envelopeId: envelope.id, status: envelope.status, envelope: await readEnvelope(context, envelope.id, ENVELOPE_READ) };
    },
  },
  {
    name: 'send_envelope',
    title: 'Send an envelope',
    description:
      'Sends a draft envelope: its first recipients are invited by email or SMS at once, which cannot be taken back (void_envelope only stops it later). ' +
      'With `sendAt` (a future RFC 3339 time with a zone, at most 90 days ahead) it is scheduled instead. With `dryRun: true` nothing changes and the answer lists ' +
      'the `problems` that would refuse the send and the `plan` (who is invited, in which turn, by which channel) (REST: PUT /envelopes/{id}/send).',
    input: sendInput.extend({
      envelopeId,
      dryRun: z.boolean().optional().describe('true: check and plan the send without sending.'),
      sendAt: sendInput.shape.sendAt.describe('Schedule the send for this time instead of sending now.'),
    }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    async run(context, args) {
      const id = String(args.envelopeId);
      if (args.dryRun === true) return { dryRun: await dryRunSend(context, { envelopeId: id }) };
      const input = without(args, 'envelopeId', 'dryRun');
      await sendEnvelope(context, { envelopeId: id, input });
      return { ...(input.sendAt === undefined ? { sent: true } : { scheduled: true }), envelope: await readEnvelope(context, id, ENVELOPE_READ) };
    },
  },
  {
    name: 'remind',
    title: 'Remind the recipients whose turn it is',
    description:
      'Sends a reminder with a fresh link, now, to every person of a sent envelope whose turn it is and who has not completed. At most once an hour per envelope ' +
      '(Envelope.RemindTooSoon says when). Answers who was reminded, by which channel (REST: POST /envelopes/{id}/remind).',
    input: z.strictObject({ envelopeId }),
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
    run: (context, args) => remindEnvelope(context, { envelopeId: String(args.envelopeId) }),
  },
  {
    name: 'void_envelope',
    title: 'Void a sent envelope',
    description:
      'Voids a sent envelope for good: nobody can sign it any more and every recipient is told. It cannot be undone. `reason` is shown to the recipients ' +
      '(REST: POST /envelopes/{id}/void).',
    input: voidInput.extend({ envelopeId, reason: voidInput.shape.reason.describe('Why, in a sentence the recipients will read.') }),
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    async run(context, args) {
      const id = String(args.envelopeId);
      await voidEnvelope(context, { envelopeId: id, input: without(args, 'envelopeId') });
      return { voided: true, envelope: await readEnvelope(context, id, ENVELOPE_READ) };
    },
  },
  {
    name: 'download_links',
    title: 'Links to download the documents',
    description:
      'Short-lived signed URLs (5 minutes) to download an envelope’s documents, each PDF and all as a ZIP: sealed once finalized, marked draft copies before; ' +
      'once the envelope is closed also the certificate of completion and the evidence package (a ZIP to verify offline). Give the URLs to a person or fetch them; ' +
      'no key is needed to open them and each download is recorded in the audit trail. The files themselves are never answered here ' +
      '(GraphQL: downloadUrl, auditLogPdfUrl, evidencePackageUrl).',
    input: z.strictObject({ envelopeId }),
    annotations: READ,
    run: (context, args) => issueDownloadLinks(context, { envelopeId: String(args.envelopeId) }),
  },
  {
    name: 'verify_envelope',
    title: 'Verify an envelope’s audit trail',
    description:
      'Recomputes the envelope’s tamper-evident audit hash chain: `{ valid: true, length, headHash }`, or `{ valid: false, brokenAtSeq, reason }` naming the first ' +
      'event that was changed, removed or reordered (REST: GET /envelopes/{id}/audit/verify). The evidence package from download_links can also be checked offline ' +
      '(npm run cli -- verify-package FILE.zip).',
    input: z.strictObject({ envelopeId }),
    annotations: READ,
    async run(context, args) {
      return { envelopeId: String(args.envelopeId), verification: await verifyEnvelopeAuditChain(context, { envelopeId: String(args.envelopeId) }) };
    },
  },
];
