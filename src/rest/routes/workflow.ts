import { advanceInput, advanceSandboxClock, voidEnvelope, voidInput } from '../../domain/signing/closing.service.ts';
import { remindEnvelope, resendInput, resendInvitation } from '../../domain/signing/nudge.service.ts';
import { cancelScheduledSend } from '../../domain/signing/scheduled-send.ts';
import { dryRunSend, sendEnvelope, sendInput } from '../../domain/signing/send.service.ts';
import { createSigningUrl, signingUrlInput } from '../../domain/signing/signing-url.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { booleanQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/** The interface spec (docs/reference/interface-spec.md) §3.1/§4.1 send, docs/reference/contract.md §5 void and §8 sandbox clock. Signing itself is GraphQL only (docs/reference/contract.md §7). */
export const workflowRoutes: RestRoute[] = [
  {
    method: 'PUT',
    path: '/envelopes/:envelopeId/send',
    doc: {
      summary: 'Send a draft',
      description:
        'Sends the draft: `{ completed: true }`. With a body `{ sendAt }` (RFC 3339 with a time zone, in the future, at most 90 days ahead; else `Request.Invalid`) the draft is checked now as a send would check it (refused with the same errors) and becomes `scheduled`: `{ scheduled: true }`; ' +
        'it is sent at `sendAt` on the service clock, or, if it can no longer be sent then, goes back to `draft` (`envelope.send_failed`, the team’s `send_failed` notice). A scheduled envelope is not editable (`Envelope.NotDraft`) until its schedule is cancelled (`DELETE /envelopes/{id}/schedule`). ' +
        'With `?dryRun=true` nothing changes (no status, no audit event, no message, no outbox row) and the answer is ' +
        '`{ dryRun: { wouldSend, problems: [{ name, description, context }], plan: { turns: [[{ recipientId, identifier, type, channel, to }]], messages: { <channel>: <count> }, expiresAt, reminders: [{ window, at }] } } }`: ' +
        '`problems` are the very errors this send would refuse with now, in the order it checks them (a draft’s content problems all in one `Envelope.NotSendable`, `context.issues`); ' +
        '`plan` (null unless a draft) the turns in the order they would start (a host stands for its in-person signers; `channel` `embedded`: nothing is sent), the first turn’s invitations counted by channel, and the first turn’s reminder windows.',
      query: [{ name: 'dryRun', description: 'true: check and plan the send without sending (nothing changes).', schema: { type: 'boolean', default: false } }],
      // The example sends now (an empty body); `sendAt` schedules, as the description says.
      body: { schema: sendInput, example: {}, required: false },
      errors: ['Envelope.NotDraft', 'Envelope.NotSendable', 'Envelope.Closed', 'Envelope.Busy'],
    },
    async handler({ request, url, params, context }) {
      if (booleanQuery(url, 'dryRun')) return { dryRun: await dryRunSend(context, { envelopeId: params.envelopeId }) };
      const input = await readJsonObject(request);
      await sendEnvelope(context, { envelopeId: params.envelopeId, input });
      return input.sendAt === undefined ? { completed: true } : { scheduled: true };
    },
  },
  {
    method: 'DELETE',
    path: '/envelopes/:envelopeId/schedule',
    doc: {
      summary: 'Cancel a scheduled send',
      description:
        'A `scheduled` envelope goes back to `draft` (and can be edited, sent or scheduled again); its send job then finds nothing to do. Recorded as `envelope.schedule_cancelled`.',
      errors: ['Envelope.NotScheduled', 'Envelope.Busy'],
    },
    async handler({ params, context }) {
      await cancelScheduledSend(context, { envelopeId: params.envelopeId });
      return { cancelled: true };
    },
  },
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/void',
    doc: { summary: 'Void a sent envelope', body: { schema: voidInput, example: { reason: 'Terms changed' }, required: false }, errors: ['Envelope.NotSent', 'Envelope.Closed'] },
    async handler({ request, params, context }) {
      await voidEnvelope(context, { envelopeId: params.envelopeId, input: await readJsonObject(request) });
      return { voided: true };
    },
  },
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/recipients/:recipientId/signing-url',
    doc: {
      summary: 'A one-use signing URL for embedded signing',
      description:
        'For a recipient whose turn it is on a sent envelope (any agent of the role, `info.embedded` or not): a URL that opens the signing page once, within 5 minutes. ' +
        '`frameOrigin` (allowed by the team settings’ `embedding.frameOrigins`, else `SIGNING_FRAME_ANCESTORS`) is the one origin that may frame that page; ' +
        '`returnUrl` is where the page goes after completing, declining or delegating (`?event=…&envelopeId=…`); `locale` the page’s language. Recorded as `signing_url.created`.',
      body: { schema: signingUrlInput, example: { frameOrigin: 'https://app.example.com', returnUrl: 'https://app.example.com/signed', locale: 'en-US' }, required: false },
      errors: ['Envelope.NotSent', 'Envelope.Closed', 'Envelope.Busy', 'Signing.NotYourTurn', 'Signing.RecipientCompleted', 'Signing.FrameOriginNotAllowed'],
    },
    async handler({ request, params, context }) {
      return createSigningUrl(context, { envelopeId: params.envelopeId, recipientId: params.recipientId, input: await readJsonObject(request) });
    },
  },
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/remind',
    doc: {
      summary: 'Remind everyone whose turn it is, now',
      description:
        'Every person whose turn it is and who has not completed (signers, delegators, hosts, approvers’ agents that have not approved; not embedded people, who are never mailed) is sent a reminder with a fresh link. ' +
        'At most once an hour per envelope (`Envelope.RemindTooSoon`, `Retry-After`). Answers who was reminded, by which channel. Recorded as `reminder.requested`.',
      errors: ['Envelope.NotSent', 'Envelope.Closed', 'Envelope.Busy', 'Envelope.RemindTooSoon'],
    },
    async handler({ params, context }) {
      return remindEnvelope(context, { envelopeId: params.envelopeId });
    },
  },
  {
    method: 'POST',
    path: '/envelopes/:envelopeId/recipients/:recipientId/resend',
    doc: {
      summary: 'Send an invitation again, optionally to a corrected address',
      description:
        'For the agent named (default: the role’s first) of a recipient whose turn it is: its invitation links die (they answer `Signing.InvalidToken`) and a new link is sent. ' +
        '`email` / `phone` correct the person’s address on this envelope (not the contact it came from). ' +
        'The same address again at most once an hour per agent (`Envelope.RemindTooSoon`); a corrected address at any time. Embedded people are refused (`Signing.EmbeddedAgent`), and so is an approver’s agent that already approved (`Signing.AlreadyApproved`). Recorded as `invitation.resent` and `invitation.queued`.',
      body: { schema: resendInput, example: { email: 'tom.tenant@example.com' }, required: false },
      errors: [
        'Envelope.NotSent',
        'Envelope.Closed',
        'Envelope.Busy',
        'Envelope.RemindTooSoon',
        'Signing.NotYourTurn',
        'Signing.RecipientCompleted',
        'Signing.EmbeddedAgent',
        'Signing.AlreadyApproved',
      ],
    },
    async handler({ request, params, context }) {
      return resendInvitation(context, { envelopeId: params.envelopeId, recipientId: params.recipientId, input: await readJsonObject(request) });
    },
  },
  {
    method: 'POST',
    path: '/sandbox/clock',
    doc: { summary: 'Move the sandbox clock forward (SANDBOX_CLOCK=true only)', body: { schema: advanceInput, example: { seconds: 86400 } }, errors: ['Sandbox.Disabled'] },
    async handler({ request, context }) {
      return advanceSandboxClock(context, { input: await readJsonObject(request) });
    },
  },
];
