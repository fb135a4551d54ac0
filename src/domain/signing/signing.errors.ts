import { DomainError, type ValidationIssue } from '../../shared/errors.ts';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';

/**
 * `Envelope.NotSendable`: the draft is not ready to send (docs/reference/workflow.md "Sending"). Every problem is
 * listed in `context.issues` at once; nothing changed.
 */
export class EnvelopeNotSendableError extends DomainError {
  constructor(envelopeId: string, issues: ValidationIssue[]) {
    super('Envelope.NotSendable', 'The envelope cannot be sent yet; context.issues lists every missing thing. Nothing changed.', { envelopeId, issues });
  }
}

/** `Envelope.Closed`: the envelope is finalized, voided or expired and never changes again. */
export class EnvelopeClosedError extends DomainError {
  constructor(envelopeId: string, status: EnvelopeStatus) {
    super('Envelope.Closed', `The envelope is ${status}; a closed envelope never changes.`, { envelopeId, status });
  }
}

/** `Envelope.NotSent`: the operation (void) needs a sent envelope; a draft is deleted instead. */
export class EnvelopeNotSentError extends DomainError {
  constructor(envelopeId: string, status: EnvelopeStatus) {
    super('Envelope.NotSent', `The envelope is ${status}; only a sent envelope can be voided (delete a draft instead).`, { envelopeId, status });
  }
}

/** `Signing.MissingToken`: a recipient-side operation without the `X-Signing-Token` header. */
export class SigningTokenMissingError extends DomainError {
  constructor() {
    super('Signing.MissingToken', 'This operation needs the signing link token in the X-Signing-Token header.');
  }
}

/**
 * `Signing.InvalidToken`: the token is unknown, or its link died (the role was delegated to
 * someone else). Unknown and dead tokens are deliberately not told apart.
 */
export class SigningTokenInvalidError extends DomainError {
  constructor() {
    super('Signing.InvalidToken', 'The signing link is not valid (unknown, or no longer in use).');
  }
}

/** `Signing.NotYourTurn`: the recipient's turn has not begun (recipients of a lower order are still signing). Nothing changed. */
export class SigningNotYourTurnError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.NotYourTurn', 'It is not this recipient’s turn yet; recipients of a lower order must complete first.', { recipientId });
  }
}

/** `Signing.RecipientCompleted`: the role is already complete (by this person or another agent of the role). Nothing changed. */
export class SigningRecipientCompletedError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.RecipientCompleted', 'This role has already been completed; nothing more can be submitted for it.', { recipientId });
  }
}

/**
 * `Signing.EnvelopeChanged` (409): the sender corrected the envelope after the signing page loaded
 * it; the submission names an older revision than the envelope's. Nothing changed: reload the
 * session (it carries the new revision) and submit again.
 */
export class SigningEnvelopeChangedError extends DomainError {
  constructor(options: { envelopeId: string; revision: number; submittedRevision: number }) {
    super('Signing.EnvelopeChanged', 'The sender has corrected this envelope since the page was loaded; nothing was saved. Reload it and submit again.', options);
  }
}

/** `Signing.FieldNotAssigned`: a value for a field that is not this recipient's (another recipient's, or no such field). Nothing changed. */
export class SigningFieldNotAssignedError extends DomainError {
  constructor(fieldIds: string[]) {
    super('Signing.FieldNotAssigned', 'Values were given for fields that are not assigned to this recipient; nothing was saved.', { fieldIds });
  }
}

/** `Signing.FieldReadonly`: a value for a readonly field, which keeps its pre-filled value. Nothing changed. */
export class SigningFieldReadonlyError extends DomainError {
  constructor(fieldIds: string[]) {
    super('Signing.FieldReadonly', 'Readonly fields keep their pre-filled value; nothing was saved.', { fieldIds });
  }
}

/** `Signing.RequiredFieldsMissing`: completing needs a value in every required field of the recipient. Nothing changed. */
export class SigningRequiredFieldsMissingError extends DomainError {
  constructor(fieldIds: string[]) {
    super('Signing.RequiredFieldsMissing', 'Required fields have no value yet; fill them to complete. Nothing was saved.', { fieldIds });
  }
}

/**
 * `Signing.ValueDoesNotFit`: a value too long for a box it is drawn in, even wrapped at the
 * smallest size the sealed PDF draws text (8 pt); drawn, it would run outside the box or be cut.
 */
export class SigningValueDoesNotFitError extends DomainError {
  constructor(fields: { fieldId: string; identifier: string; page: number }[]) {
    super(
      'Signing.ValueDoesNotFit',
      `Too long for its box on the page, even at the smallest size the document is written in: ${[...new Set(fields.map((field) => field.identifier))].join(', ')}. Shorten the value (a value the service fills in, such as a name, needs a larger box: ask the sender). Nothing was saved.`,
      { fields },
    );
  }
}

/** `Signing.NotDelegator`: only a `delegator` recipient may hand its role to another person. */
export class SigningNotDelegatorError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.NotDelegator', 'Only a delegator recipient can delegate its role.', { recipientId });
  }
}

/** `Signing.AlreadyDelegated`: the role was delegated once; the new person signs it and cannot hand it on again. */
export class SigningAlreadyDelegatedError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.AlreadyDelegated', 'This role has already been delegated once.', { recipientId });
  }
}

/** `Signing.NotHost`: hosted (in-person) signing is started from a host's link only. */
export class SigningNotHostError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.NotHost', 'Only a host recipient can start in-person signing.', { recipientId });
  }
}

/** `Signing.NotHostedSigner`: the recipient is not an in_person_signer hosted by this host. */
export class SigningNotHostedSignerError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.NotHostedSigner', 'No in-person signer with this id is hosted by this host.', { recipientId });
  }
}

/** `Signing.HostCannotSubmit`: a host has no fields of its own; it completes when its hosted signers have. */
export class SigningHostCannotSubmitError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.HostCannotSubmit', 'A host does not sign itself: start a hosted session for each in-person signer instead.', { recipientId });
  }
}

/** `Signing.ApproverCannotSubmit` (409): an approver holds no fields; it approves (`approveSigning`) or rejects (`declineSigning`). */
export class SigningApproverCannotSubmitError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.ApproverCannotSubmit', 'An approver does not fill in or complete fields: approve or reject instead.', { recipientId });
  }
}

/** `Signing.NotApprover` (403): `approveSigning` from the link of a role that is not an approver. Nothing changed. */
export class SigningNotApproverError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.NotApprover', 'Only an approver approves; this link belongs to another kind of role.', { recipientId });
  }
}

/** `Signing.AlreadyApproved` (409): this agent already approved the role (another person of the same group agent, or a retry); it counts once. Nothing changed. */
export class SigningAlreadyApprovedError extends DomainError {
  constructor(recipientId: string, agentId: string) {
    super('Signing.AlreadyApproved', 'This approval is already on record; each agent counts once towards the quorum.', { recipientId, agentId });
  }
}

/**
 * `Signing.RoleCompleted` (410): the approver role reached its quorum without this agent; its
 * approval is no longer needed. Nothing changed.
 */
export class SigningRoleCompletedError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.RoleCompleted', 'Enough approvers have already approved; this approval is no longer needed.', { recipientId });
  }
}

/** `Signing.OtpRequired`: the link's person has a phone and has not verified a one-time code on this link (or the verification lapsed). Nothing changed. */
export class SigningOtpRequiredError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.OtpRequired', 'Confirm it is you first: request a one-time code (requestSigningOtp) and enter it (verifySigningOtp). Nothing changed.', { recipientId });
  }
}

/** `Signing.OtpNotRequired`: a one-time code was requested or entered on a link whose person has no phone. */
export class SigningOtpNotRequiredError extends DomainError {
  constructor(recipientId: string) {
    super('Signing.OtpNotRequired', 'This signing link needs no one-time code (its person has no phone number).', { recipientId });
  }
}

/** `Signing.OtpNotRequested`: a code was entered before any was requested on this link. */
export class SigningOtpNotRequestedError extends DomainError {
  constructor() {
    super('Signing.OtpNotRequested', 'No one-time code was requested on this link yet; request one first.');
  }
}

/** `Signing.OtpInvalid`: the code entered is not the live code of this link; the attempt is counted. */
export class SigningOtpInvalidError extends DomainError {
  constructor(attemptsLeft: number) {
    super('Signing.OtpInvalid', `The code is not correct. ${attemptsLeft} attempt(s) left for this code.`, { attemptsLeft });
  }
}

/** `Signing.OtpExpired`: the live code of this link is older than its validity; request a new one. */
export class SigningOtpExpiredError extends DomainError {
  constructor(expiresAt: Date) {
    super('Signing.OtpExpired', 'The code has expired; request a new one.', { expiresAt: expiresAt.toISOString() });
  }
}

/** `Signing.OtpAttemptsExhausted`: every attempt of the live code was used; request a new one. */
export class SigningOtpAttemptsExhaustedError extends DomainError {
  constructor(maxAttempts: number) {
    super('Signing.OtpAttemptsExhausted', `The code was entered wrongly ${maxAttempts} times and no longer works; request a new one.`, { maxAttempts });
  }
}

/**
 * `Signing.OtpAlreadyUsed`: the link's newest code was already entered rightly once (by this try's
 * twin, racing it, or earlier); a code verifies once. The verification it made stands for its
 * period (`signingSession.otp`); after that, request a new code. No attempt was taken.
 */
export class SigningOtpAlreadyUsedError extends DomainError {
  constructor() {
    super('Signing.OtpAlreadyUsed', 'This code was already used and cannot be entered again; if the link still asks for a code, request a new one.');
  }
}

/**
 * `Signing.OtpRateLimited`: codes are sent at most once per interval and a few times per hour per
 * person; `context.retryAfterSeconds` says when the next one may be requested. Nothing was sent.
 */
export class SigningOtpRateLimitedError extends DomainError {
  constructor(limit: 'interval' | 'hour', retryAfterSeconds: number) {
    super('Signing.OtpRateLimited', `A new code can be requested in ${retryAfterSeconds} s.`, { limit, retryAfterSeconds });
  }
}

/**
 * `Signing.PhoneMessageCapReached`: the person already got the day's allowance of SMS/WhatsApp
 * messages (invitations, reminders and codes together, PHONE_MESSAGES_PER_DAY in 24 hours).
 * Nothing was sent; `context.retryAfterSeconds` says when one becomes possible again.
 */
export class SigningPhoneMessageCapReachedError extends DomainError {
  constructor(limit: number, retryAfterSeconds: number) {
    super('Signing.PhoneMessageCapReached', `This phone number received the most messages allowed in 24 hours (${limit}); try again in ${retryAfterSeconds} s.`, {
      limit,
      retryAfterSeconds,
    });
  }
}

/** `Sandbox.Disabled`: the sandbox clock works only when the service runs with SANDBOX_CLOCK=true. */
export class SandboxDisabledError extends DomainError {
  constructor() {
    super('Sandbox.Disabled', 'The sandbox clock is disabled on this service (SANDBOX_CLOCK is not true).');
  }
}

/**
 * `Signing.FrameOriginNotAllowed`: a signing URL's `frameOrigin` is not one the team allows
 * (its settings' `embedding.frameOrigins`, else SIGNING_FRAME_ANCESTORS). Nothing was made.
 */
export class SigningFrameOriginNotAllowedError extends DomainError {
  constructor(frameOrigin: string, source: 'team_settings' | 'configuration') {
    super(
      'Signing.FrameOriginNotAllowed',
      source === 'team_settings'
        ? 'This origin is not in the team’s embedding.frameOrigins (PATCH /team/settings); no signing URL was made.'
        : 'This origin is not allowed to frame signing pages (the team names no embedding.frameOrigins, and SIGNING_FRAME_ANCESTORS does not list it); no signing URL was made.',
      { frameOrigin, source },
    );
  }
}

/**
 * `Signing.SessionExpired`: the embedded signing session (opened from a one-use signing URL) has
 * ended; the integrator asks for a new signing URL. Nothing changed.
 */
export class SigningSessionExpiredError extends DomainError {
  constructor(expiresAt: Date) {
    super('Signing.SessionExpired', 'This signing session has ended; ask for a new signing URL.', { expiresAt: expiresAt.toISOString() });
  }
}

/**
 * `Envelope.RemindTooSoon`: the envelope's people were reminded (or this agent's invitation was
 * sent again) less than `REMIND_INTERVAL_MINUTES` ago; `context.retryAfterSeconds` (also the
 * `Retry-After` header) says when the next one may go. Nothing was sent.
 */
export class EnvelopeRemindTooSoonError extends DomainError {
  constructor(envelopeId: string, retryAfterSeconds: number, what: 'remind' | 'resend') {
    super('Envelope.RemindTooSoon', `The ${what === 'remind' ? 'reminder' : 'invitation'} went out a short while ago; another can be sent in ${retryAfterSeconds} s. Nothing was sent.`, {
      envelopeId,
      retryAfterSeconds,
    });
  }
}

/**
 * `Signing.EmbeddedAgent`: an invitation was asked to be sent again to a person who signs inside
 * the integrator's application (`info.embedded`): we never mail or text such a person; ask for a
 * signing URL instead. Nothing changed.
 */
export class SigningEmbeddedAgentError extends DomainError {
  constructor(recipientId: string, agentId: string) {
    super('Signing.EmbeddedAgent', 'This person signs embedded (info.embedded): no invitation is ever mailed or texted to them; create a signing URL instead. Nothing changed.', {
      recipientId,
      agentId,
    });
  }
}

/**
 * `Signing.TrustServiceFailed` (502): the signer's trust service did not do its part (unreachable,
 * too slow, or it refused: a wrong PIN, a declined consent, a revoked certificate). The values
 * stay saved and the role is not completed: Finish again starts the step over. `reason` is one of
 * `unreachable`, `timeout`, `refused`, `invalid_response`, `not_configured`, `certificate_revoked`,
 * `declined`, `envelope_changed`.
 */
export class SigningTrustServiceFailedError extends DomainError {
  constructor(options: { reason: string; detail: string; trustServiceId?: string; providerSaid?: string }) {
    super('Signing.TrustServiceFailed', `Your trust service could not sign (${options.reason}): ${options.detail}. Your values are saved; finish again to retry.`, {
      reason: options.reason,
      ...(options.trustServiceId ? { trustServiceId: options.trustServiceId } : {}),
      // The provider's own words (its error_description), for a page to quote in its own language's sentence.
      ...(options.providerSaid ? { providerSaid: options.providerSaid } : {}),
    });
  }
}
