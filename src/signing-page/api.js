// The service as the page talks to it: the recipient side of the GraphQL API and the document
// route, every request with the token the page acts with (store.js) as X-Signing-Token.
import { state } from './store.js';

/** @import { ErrorContext, FieldValue, Session } from './types.js' */

const SESSION_SELECTION = `envelope { id name status revision } signerName locale isMyTurn isExpired requiredFieldIds
  sender { displayName logoUrl accentColor footer declineNotified }
  recipient { id type roleName color activatedAt completedAt declinedAt delegatedAt }
  documents { id name order pageCount pages { index width height } }
  fields { id identifier type label tooltip required readonly value config visibleWhen views { documentId page location { x y } size { width height } } }
  completedFields { color signerName field { id identifier type label tooltip required readonly value config visibleWhen views { documentId page location { x y } size { width height } } } }
  hostedSigners { id roleName personName activatedAt completedAt }
  approval { quorum approvals approvedByMe }
  otp { required verified maskedPhone channel resendInSeconds }
  trustSignature { level status error { name reason message providerSaid } authorizeUrl }`;
const SESSION_QUERY = `query SigningPage { signingSession { ${SESSION_SELECTION} } }`;
const SUBMIT = `mutation SigningPageSubmit($values: [SigningValueInput!], $complete: Boolean, $consent: String, $revision: Int) {
  submitSigning(values: $values, complete: $complete, consent: $consent, revision: $revision) { ${SESSION_SELECTION} } }`;
const HOSTED = `mutation SigningPageHost($recipientId: ID!) { startHostedSigning(recipientId: $recipientId) { recipientId token } }`;
const DELEGATE = `mutation SigningPageDelegate($person: SigningPersonInput!) { delegateSigning(person: $person) { recipientId delegatedAt } }`;
const OTP_REQUEST = `mutation SigningPageOtpRequest { requestSigningOtp { channel maskedPhone resendInSeconds } }`;
const OTP_VERIFY = `mutation SigningPageOtpVerify($code: String!) { verifySigningOtp(code: $code) { otp { verified } } }`;
const APPROVE = `mutation SigningPageApprove($comment: String) { approveSigning(comment: $comment) { ${SESSION_SELECTION} } }`;
const DECLINE = `mutation SigningPageDecline($reason: String!) { declineSigning(reason: $reason) { envelope { status } } }`;
const FINAL_COPY = `query SigningPageFinalCopy { signingFinalCopy { url } }`;
const LIVE = 'subscription SigningPageLive { signingSessionChanged { status } }';
const UPLOAD_ATTACHMENT = 'mutation SigningPageUpload($fieldId: ID!, $file: Upload!) { uploadSigningAttachment(fieldId: $fieldId, file: $file) { id name contentType size sha256 } }';
const REMOVE_ATTACHMENT = 'mutation SigningPageRemoveFile($fileId: ID!) { removeSigningAttachment(fileId: $fileId) { id } }';

/** A refusal of the service: its error's name (`extensions.code`) and context. */
export class ApiError extends Error {
  /**
   * @param {string} message
   * @param {string | undefined} code
   * @param {ErrorContext | undefined} context
   */
  constructor(message, code, context) {
    super(message);
    this.code = code;
    /** @type {ErrorContext} */
    this.context = context ?? {};
  }
}

/**
 * One GraphQL operation; its first error becomes an ApiError.
 * @param {string} query
 * @param {Record<string, unknown>} [variables]
 * @returns {Promise<any>} the answer's `data`, as the operation selected it
 */
async function gql(query, variables = {}) {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-signing-token': state.token },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors?.length) {
    const [error] = body.errors;
    throw new ApiError(error.message, error.extensions?.code, error.extensions?.context);
  }
  return body.data;
}

/** @returns {Promise<Session>} */
export async function readSession() {
  return (await gql(SESSION_QUERY)).signingSession;
}

/**
 * Saves values (`complete`: and finishes, with the consent text shown); answers the session after
 * it. It names the envelope revision the page shows: when the sender has corrected the envelope
 * since, the service saves nothing and answers `Signing.EnvelopeChanged`.
 * @param {{ values: { fieldId: string, value: FieldValue }[], complete?: boolean, consent?: string }} submission
 * @returns {Promise<Session>}
 */
export async function submitSigning(submission) {
  return (await gql(SUBMIT, { ...submission, revision: state.session?.envelope.revision ?? null })).submitSigning;
}

/**
 * A host hands the device to one of its in-person signers: that signer's token.
 * @param {string} recipientId
 * @returns {Promise<{ recipientId: string, token: string }>}
 */
export async function startHostedSigning(recipientId) {
  return (await gql(HOSTED, { recipientId })).startHostedSigning;
}

/**
 * @param {{ name: string, email: string, locale: string }} person
 * @returns {Promise<void>}
 */
export async function delegateSigning(person) {
  await gql(DELEGATE, { person });
}

/** @returns {Promise<{ channel: string, maskedPhone: string, resendInSeconds: number }>} */
export async function requestSigningOtp() {
  return (await gql(OTP_REQUEST)).requestSigningOtp;
}

/**
 * @param {string} code
 * @returns {Promise<void>}
 */
export async function verifySigningOtp(code) {
  await gql(OTP_VERIFY, { code });
}

/**
 * An approver approves (issue 33), with an optional comment; answers the session after it.
 * @param {string | null} comment
 * @returns {Promise<Session>}
 */
export async function approveSigning(comment) {
  return (await gql(APPROVE, { comment })).approveSigning;
}

/**
 * @param {string} reason
 * @returns {Promise<void>}
 */
export async function declineSigning(reason) {
  await gql(DECLINE, { reason });
}

/** @returns {Promise<string>} a short-lived URL of this recipient's copy of the finalized envelope */
export async function finalCopyUrl() {
  return (await gql(FINAL_COPY)).signingFinalCopy.url;
}

/**
 * One page of a document (`GET /signing/documents/{id}/pages/{index}`, index from 0), as a
 * one-page PDF for pdf.js to draw: the original's page, marked as not executed until the envelope
 * is finalized (an escrowed copy, docs/artefacts.md). Pages are fetched one by one as they come
 * near the screen (documents.js).
 * @param {string} documentId
 * @param {number} index
 * @returns {Promise<Uint8Array>}
 */
export async function documentPageBytes(documentId, index) {
  const response = await fetch(`/signing/documents/${encodeURIComponent(documentId)}/pages/${index}`, { headers: { 'x-signing-token': state.token } });
  if (!response.ok) throw new Error(`document page ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/**
 * `signingSessionChanged` over GraphQL over SSE: the response whose body streams the events (a
 * fetch stream, as EventSource cannot send X-Signing-Token). live.js reads it.
 * @param {AbortSignal} signal
 * @returns {Promise<Response>}
 */
export function openLiveStream(signal) {
  return fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-signing-token': state.token },
    body: JSON.stringify({ query: LIVE }),
    signal,
  });
}

/**
 * Uploads one file for an attachment field as a GraphQL multipart request, reporting the bytes
 * sent as they go (XMLHttpRequest's upload progress: fetch reports none for a request body).
 * @param {string} fieldId
 * @param {File} file
 * @param {(sent: number, total: number) => void} onProgress
 * @returns {Promise<import('./types.js').AttachmentFile>}
 */
export function uploadAttachment(fieldId, file, onProgress) {
  const form = new FormData();
  form.append('operations', JSON.stringify({ query: UPLOAD_ATTACHMENT, variables: { fieldId, file: null } }));
  form.append('map', JSON.stringify({ 0: ['variables.file'] }));
  form.append('0', file, file.name);
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', '/graphql');
    request.setRequestHeader('accept', 'application/json');
    request.setRequestHeader('x-signing-token', state.token);
    request.upload.addEventListener('progress', (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size));
    request.addEventListener('error', () => reject(new TypeError('the upload could not reach the service')));
    request.addEventListener('load', () => {
      /** @type {any} */
      let body;
      try {
        body = JSON.parse(request.responseText);
      } catch {
        reject(new TypeError('the service answered the upload with something else than JSON'));
        return;
      }
      const [error] = body.errors ?? [];
      if (error) reject(new ApiError(error.message, error.extensions?.code, error.extensions?.context));
      else resolve(body.data.uploadSigningAttachment);
    });
    request.send(form);
  });
}

/**
 * Removes one of the signer's uploads (a value naming it loses it).
 * @param {string} fileId
 */
export async function removeAttachment(fileId) {
  await gql(REMOVE_ATTACHMENT, { fileId });
}
