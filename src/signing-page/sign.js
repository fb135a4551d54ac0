// The signing page's script (served by src/signing-page/plugin.ts). Plain ES module, no build
// step: it reads the link's session through GraphQL (X-Signing-Token = the token in this page's
// URL), draws the documents with pdf.js, overlays this recipient's fields and submits values.
import * as pdfjs from './pdf.mjs';
import { LOCALES, STRINGS } from './strings.js';

pdfjs.GlobalWorkerOptions.workerSrc = new URL('./pdf.worker.mjs', import.meta.url).href;

const linkToken = decodeURIComponent(location.pathname.split('/')[2] ?? '');
/** The token the page acts with: the link's, or a hosted signer's while a host hands the device over. */
let token = linkToken;
/** While an in-person signer signs on the host's device: that signer's role name. */
let hostedSigner = null;
const app = document.getElementById('app');
const localeSelect = document.getElementById('locale');

const SESSION_SELECTION = `envelope { id name status } signerName locale isMyTurn isExpired requiredFieldIds
  recipient { id type roleName color activatedAt completedAt declinedAt delegatedAt }
  documents { id name order pageCount pages { index width height } }
  fields { id identifier type label tooltip required readonly value config views { documentId page location { x y } size { width height } } }
  hostedSigners { id roleName activatedAt completedAt }
  otp { required verified maskedPhone channel resendInSeconds }`;
const SESSION_QUERY = `query SigningPage { signingSession { ${SESSION_SELECTION} } }`;
const SUBMIT = `mutation SigningPageSubmit($values: [SigningValueInput!], $complete: Boolean, $consent: String) {
  submitSigning(values: $values, complete: $complete, consent: $consent) { ${SESSION_SELECTION} } }`;
const HOSTED = `mutation SigningPageHost($recipientId: ID!) { startHostedSigning(recipientId: $recipientId) { recipientId token } }`;
const DELEGATE = `mutation SigningPageDelegate($person: SigningPersonInput!) { delegateSigning(person: $person) { recipientId delegatedAt } }`;
const OTP_REQUEST = `mutation SigningPageOtpRequest { requestSigningOtp { channel maskedPhone resendInSeconds } }`;
const OTP_VERIFY = `mutation SigningPageOtpVerify($code: String!) { verifySigningOtp(code: $code) { otp { verified } } }`;
const DECLINE = `mutation SigningPageDecline($reason: String!) { declineSigning(reason: $reason) { envelope { status } } }`;
const FINAL_COPY = `query SigningPageFinalCopy { signingFinalCopy { url } }`;

/** @type {any} */ let session = null;
/** What is on screen: a state name ('signing', 'done', 'voided', …). */
let screen = 'loading';
let locale = 'en-US';
let t = STRINGS[locale];
const pdfDocuments = new Map();
let pollTimer = 0;
/** Waiting for one's turn, the live stream says when it comes; this slow look only covers a stream that could not be kept open. */
const FALLBACK_POLL_MS = 60_000;

// ---------------------------------------------------------------- helpers

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') node.className = value;
    else if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) if (child !== null && child !== undefined && child !== false) node.append(child);
  return node;
}

class ApiError extends Error {
  constructor(message, code, context) {
    super(message);
    this.code = code;
    this.context = context ?? {};
  }
}

async function gql(query, variables = {}) {
  const response = await fetch('/graphql', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', 'x-signing-token': token },
    body: JSON.stringify({ query, variables }),
  });
  const body = await response.json();
  if (body.errors?.length) {
    const [error] = body.errors;
    throw new ApiError(error.message, error.extensions?.code, error.extensions?.context);
  }
  return body.data;
}

function pickLocale(preferred) {
  if (preferred && LOCALES.includes(preferred)) return preferred;
  for (const language of navigator.languages ?? [navigator.language]) {
    const match = LOCALES.find((candidate) => candidate.toLowerCase() === language.toLowerCase() || candidate.slice(0, 2) === language.slice(0, 2).toLowerCase());
    if (match) return match;
  }
  return 'en-US';
}

function setLocale(next) {
  locale = next;
  t = STRINGS[locale];
  document.documentElement.lang = locale;
  localeSelect.value = locale;
  document.getElementById('locale-label').textContent = t.language;
  document.getElementById('brand').textContent = t.brand;
  render();
}

localeSelect.addEventListener('change', () => setLocale(localeSelect.value));

// ---------------------------------------------------------------- states

function screenOf(current) {
  if (current.recipient.declinedAt) return 'declined';
  if (current.envelope.status === 'voided') return 'voided';
  if (current.envelope.status === 'finalized') return 'finalized';
  if (current.isExpired) return 'expired';
  if (current.recipient.completedAt) return 'done';
  if (current.recipient.type === 'host') return needsCode(current) ? 'verify' : 'host';
  if (!current.isMyTurn) return 'not-your-turn';
  return needsCode(current) ? 'verify' : 'signing';
}

/** Screens that follow the envelope live (a void, finalization or expiry shows at once). */
const LIVE_SCREENS = ['signing', 'not-your-turn', 'host', 'verify'];

async function load() {
  try {
    const data = await gql(SESSION_QUERY);
    session = data.signingSession;
    if (screen === 'loading') setLocale(pickLocale(session.locale));
    show(screenOf(session));
    if (LIVE_SCREENS.includes(screen)) watchEnvelope();
  } catch (error) {
    show(errorScreen(error));
  }
}

function errorScreen(error) {
  if (error instanceof ApiError) {
    if (error.code === 'Envelope.Closed') return { finalized: 'finalized', voided: 'voided', expired: 'expired' }[error.context.status] ?? 'voided';
    if (error.code === 'Signing.Expired') return 'expired';
    if (error.code === 'Signing.InvalidToken' || error.code === 'Signing.MissingToken') return 'invalid';
  }
  return 'error';
}

/**
 * The signer's own last action (complete, decline, delegate): the live stream is ended first, so
 * the event this very action causes (say, envelope.voided by a decline) does not replace the
 * screen that answers it; if the action fails, watching resumes.
 */
async function closingAction(action) {
  stopWatching();
  try {
    return await action();
  } catch (error) {
    watchEnvelope();
    throw error;
  }
}

function stopWatching() {
  watching?.controller.abort();
  watching = null;
}

function show(next) {
  // An in-person signer who is done (or declined) hands the device back to the host.
  screen = hostedSigner && ['done', 'finalized', 'declined', 'voided'].includes(next) ? 'hand-back' : next;
  clearTimeout(pollTimer);
  if (!LIVE_SCREENS.includes(screen)) stopWatching();
  if (screen === 'not-your-turn') pollTimer = setTimeout(load, FALLBACK_POLL_MS);
  render();
}

function render() {
  document.body.dataset.screen = screen;
  if (screen === 'loading') {
    app.replaceChildren(el('p', { class: 'loading' }, t.loading));
    return;
  }
  if (screen === 'signing') {
    renderSigning();
    return;
  }
  if (screen === 'host') {
    renderHost();
    return;
  }
  if (screen === 'hand-back') {
    renderHandBack();
    return;
  }
  if (screen === 'verify') {
    renderVerify();
    return;
  }
  const messages = {
    done: [t.doneTitle, t.doneText],
    finalized: [t.finalizedTitle, t.finalizedText],
    voided: [t.voidedTitle, t.voidedText],
    expired: [t.expiredTitle, t.expiredText],
    declined: [t.declinedTitle, t.declinedText],
    delegated: [t.delegatedTitle, t.delegatedText],
    'not-your-turn': [t.notYourTurnTitle, t.notYourTurnText],
    invalid: [t.invalidTitle, t.invalidText],
    host: [t.hostTitle, t.hostText],
    error: [t.errorTitle, t.errorText],
  }[screen];
  const [title, text] = messages;
  app.replaceChildren(
    el(
      'section',
      { class: `state state-${screen}`, 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, title),
      session && screen !== 'invalid' && screen !== 'error' ? el('p', { class: 'envelope-name' }, session.envelope.name) : null,
      el('p', {}, text),
      screen === 'error' ? el('button', { type: 'button', class: 'primary', onclick: () => load() }, t.retry) : null,
      screen === 'finalized' ? finalCopyButton() : null,
    ),
  );
  document.title = title;
  app.focus();
}

// ---------------------------------------------------------------- live

let watching = null;

/**
 * While a session is open, the envelope's status changes arrive over GraphQL over SSE
 * (`signingSessionChanged`, a fetch stream: EventSource cannot send X-Signing-Token). When the
 * envelope closes (voided by the sender, finalized, expired) the page shows it at once.
 */
function watchEnvelope() {
  if (watching?.token === token) return;
  watching?.controller.abort();
  const controller = new AbortController();
  watching = { token, controller };
  void (async () => {
    try {
      const response = await fetch('/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'x-signing-token': token },
        body: JSON.stringify({ query: 'subscription SigningPageLive { signingSessionChanged { status } }' }),
        signal: controller.signal,
      });
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          // Only a page still waiting or signing looks again; a screen the signer reached stays.
          if (/^event:\s*next/m.test(block) && LIVE_SCREENS.includes(screen)) void load();
        }
      }
    } catch {
      // Aborted, or the connection dropped: the next load watches again.
    }
    if (watching?.controller === controller) {
      watching = null;
      // The stream ended without the page asking (a restart, a proxy's timeout): look again soon,
      // which also opens a new stream.
      if (LIVE_SCREENS.includes(screen)) {
        clearTimeout(pollTimer);
        pollTimer = setTimeout(load, 5000);
      }
    }
  })();
}

// ---------------------------------------------------------------- one-time code

/*
 * A person with a phone confirms it is them before signing (contract §7): the session says
 * whether a code is needed (`otp.required`) and verified. The step asks for a code, takes the 6
 * digits (the phone's keyboard offers the code from the message: autocomplete="one-time-code"),
 * and counts down until a new code may be asked for. Nothing here ever sees the code but the input.
 */

/**
 * The code step's own state, kept across re-renders (a language switch) and reset per link.
 * `resendAt` is on this device's clock, from the service's "in N seconds" (never its timestamps:
 * a phone's clock may be off by minutes).
 */
const otpStep = { token: null, sentTo: null, resendAt: 0, message: '', timer: 0, session: null };

function needsCode(current) {
  return Boolean(current.otp?.required && !current.otp.verified && current.recipient.activatedAt);
}

function otpStepState() {
  if (otpStep.token !== token) Object.assign(otpStep, { token, sentTo: null, resendAt: 0, message: '', session: null });
  // A code asked for earlier (a reload): the next one waits out the interval, and the input is open.
  // A freshly read session is the service's word: a recent code (a reload) keeps the input open
  // and the countdown; none (or a verification that lapsed) starts the step from the beginning.
  if (otpStep.session !== session) {
    otpStep.session = session;
    otpStep.resendAt = session.otp.resendInSeconds > 0 ? Date.now() + session.otp.resendInSeconds * 1000 : 0;
    if (otpStep.resendAt === 0) otpStep.sentTo = null;
  }
  return otpStep;
}

function otpErrorText(error) {
  const explain = error instanceof ApiError ? t.otpErrors[error.code] : undefined;
  return explain ? explain(error.context) : error.message;
}

function renderVerify() {
  const state = otpStepState();
  const otp = session.otp;
  const codeAsked = state.sentTo !== null || state.resendAt > 0;
  document.title = `${t.otpTitle} · ${session.envelope.name}`;
  const input = el('input', {
    id: 'otp-code',
    name: 'one-time-code',
    type: 'text',
    inputmode: 'numeric',
    autocomplete: 'one-time-code',
    pattern: '[0-9]*',
    maxlength: 6,
    required: true,
    'aria-describedby': 'otp-help otp-error',
    'aria-invalid': state.message ? 'true' : undefined,
  });
  const send = el('button', { type: 'button', id: 'otp-send', class: codeAsked ? 'secondary' : 'primary', onclick: () => requestCode() }, codeAsked ? t.otpResend : t.otpSend);
  const form = el(
    'form',
    { class: 'otp-form', novalidate: true, onsubmit: (event) => (event.preventDefault(), void verifyCode(input.value)) },
    el('label', { for: 'otp-code' }, t.otpLabel),
    el('p', { id: 'otp-help', class: 'help' }, t.otpHelp),
    input,
    el('button', { type: 'submit', id: 'otp-verify', class: 'primary' }, t.otpVerify),
  );
  form.hidden = !codeAsked;
  app.replaceChildren(
    el(
      'section',
      { class: 'state state-verify', 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, t.otpTitle),
      el('p', { class: 'envelope-name' }, session.envelope.name),
      el('p', {}, t.otpText(otp.maskedPhone, otp.channel)),
      el('p', { id: 'otp-status', role: 'status' }, state.sentTo ? t.otpSent(state.sentTo) : ''),
      form,
      el('p', { id: 'otp-error', class: 'error', role: 'alert' }, state.message),
      el('div', { class: 'actions otp-actions' }, send),
    ),
  );
  tickResend();
  if (codeAsked) input.focus();
  else app.focus();
}

/** The resend button waits out the interval, saying how long is left. */
function tickResend() {
  clearInterval(otpStep.timer);
  const update = () => {
    const button = document.getElementById('otp-send');
    if (screen !== 'verify' || !button) {
      clearInterval(otpStep.timer);
      return;
    }
    const seconds = Math.ceil((otpStep.resendAt - Date.now()) / 1000);
    button.disabled = seconds > 0;
    button.textContent = seconds > 0 ? t.otpResendIn(seconds) : otpStep.sentTo !== null || otpStep.resendAt > 0 ? t.otpResend : t.otpSend;
  };
  update();
  otpStep.timer = setInterval(update, 1000);
}

async function requestCode() {
  try {
    const data = await gql(OTP_REQUEST);
    otpStep.sentTo = data.requestSigningOtp.maskedPhone;
    otpStep.resendAt = Date.now() + data.requestSigningOtp.resendInSeconds * 1000;
    otpStep.message = '';
  } catch (error) {
    if (error instanceof ApiError && error.code === 'Signing.OtpRateLimited') otpStep.resendAt = Date.now() + error.context.retryAfterSeconds * 1000;
    if (!(error instanceof ApiError) || !t.otpErrors[error.code]) {
      show(errorScreen(error));
      return;
    }
    otpStep.message = otpErrorText(error);
  }
  render();
}

async function verifyCode(value) {
  // As the service reads it (otp.service.ts normalizeOtpInput): fullwidth digits folded, spaces, dashes and invisible marks dropped.
  const code = value.normalize('NFKC').replace(/[\s\p{Pd}\u2212\p{Cf}]+/gu, '');
  if (!/^[0-9]{6}$/.test(code)) {
    otpStep.message = t.otpSixDigits;
    render();
    return;
  }
  try {
    await gql(OTP_VERIFY, { code });
    otpStep.message = '';
    await load();
  } catch (error) {
    if (!(error instanceof ApiError) || !t.otpErrors[error.code]) {
      show(errorScreen(error));
      return;
    }
    otpStep.message = otpErrorText(error);
    // A used code (a second click): the session says whether the link is verified.
    if (error.code === 'Signing.OtpAlreadyUsed') await load();
    else render();
  }
}

// ---------------------------------------------------------------- final copy

/**
 * The finalized screen's download: the link's own token is dead by now, but still names this
 * recipient, so the service answers a short-lived final-copy URL for it (asked on click, so it
 * never expires on an open page); the browser downloads the file from there.
 */
function finalCopyButton() {
  const status = el('p', { class: 'error', role: 'alert', id: 'final-copy-error' });
  const button = el('button', { type: 'button', class: 'primary', id: 'download-final-copy', onclick: () => downloadFinalCopy(status) }, t.downloadFinalCopy);
  return el('div', { class: 'final-copy' }, button, status);
}

async function downloadFinalCopy(status) {
  status.textContent = '';
  try {
    const data = await gql(FINAL_COPY);
    // Same service as this page: its path, whatever host name PUBLIC_URL gives the service.
    location.assign(new URL(data.signingFinalCopy.url).pathname);
  } catch (error) {
    status.textContent = errorMessage(error);
  }
}

// ---------------------------------------------------------------- in person

/** The host's page: the hosted signers whose turn it is, each handed the device in turn. */
function renderHost() {
  const waiting = session.hostedSigners.filter((signer) => signer.activatedAt && !signer.completedAt);
  const done = session.hostedSigners.filter((signer) => signer.completedAt);
  app.replaceChildren(
    el(
      'section',
      { class: 'state state-host', 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, t.hostTitle),
      el('p', { class: 'envelope-name' }, session.envelope.name),
      el('p', {}, t.hostText),
      el(
        'ul',
        { class: 'hosted' },
        waiting.map((signer) =>
          el('li', {}, el('button', { type: 'button', class: 'primary', 'data-hosted': signer.id, onclick: () => handOver(signer) }, t.handTo(signer.roleName))),
        ),
        done.map((signer) => el('li', { class: 'hosted-done' }, t.hostedDone(signer.roleName))),
      ),
      waiting.length === 0 && done.length < session.hostedSigners.length ? el('p', {}, t.notYourTurnText) : null,
    ),
  );
  document.title = t.hostTitle;
  app.focus();
}

async function handOver(signer) {
  try {
    const data = await gql(HOSTED, { recipientId: signer.id });
    token = data.startHostedSigning.token;
    hostedSigner = signer.roleName;
    await load();
  } catch (error) {
    show(errorScreen(error));
  }
}

/** Between two signers: the device goes back to the host before anyone sees the next session. */
function renderHandBack() {
  app.replaceChildren(
    el(
      'section',
      { class: 'state state-hand-back', 'aria-labelledby': 'state-title' },
      el('h1', { id: 'state-title' }, t.handBackTitle),
      el('p', {}, t.handBackText(hostedSigner ?? '')),
      el('button', { type: 'button', class: 'primary', id: 'back-to-host', onclick: backToHost }, t.backToHost),
    ),
  );
  document.title = t.handBackTitle;
  app.focus();
}

async function backToHost() {
  token = linkToken;
  hostedSigner = null;
  await load();
}

// ---------------------------------------------------------------- signing

function fieldsInOrder() {
  const documentOrder = new Map(session.documents.map((document, index) => [document.id, index]));
  const first = (field) => {
    const view = [...field.views].sort((a, b) => documentOrder.get(a.documentId) - documentOrder.get(b.documentId) || a.page - b.page || a.location.y - b.location.y)[0];
    return view ? [documentOrder.get(view.documentId), view.page, view.location.y, view.location.x] : [Infinity, 0, 0, 0];
  };
  return [...session.fields].sort((a, b) => {
    const [x, y] = [first(a), first(b)];
    for (let index = 0; index < x.length; index += 1) if (x[index] !== y[index]) return x[index] - y[index];
    return 0;
  });
}

function requiredCount() {
  const required = session.fields.filter((field) => field.required && !field.readonly);
  const done = required.filter((field) => field.value !== null).length;
  return { done, total: required.length };
}

function renderSigning() {
  document.title = `${session.envelope.name} · ${t.brand}`;
  const progress = el('p', { id: 'progress', class: 'progress', role: 'status' });
  const toolbar = el(
    'div',
    { class: 'toolbar', role: 'toolbar', 'aria-label': t.brand },
    el('button', { type: 'button', id: 'next-field', onclick: goToNextField }, t.nextField),
    session.recipient.type === 'delegator' ? el('button', { type: 'button', id: 'delegate', class: 'secondary', onclick: openDelegate }, t.delegate) : null,
    el('button', { type: 'button', id: 'decline', class: 'secondary', onclick: openDecline }, t.decline),
    el('button', { type: 'button', id: 'finish', class: 'primary', onclick: openFinish }, t.finish),
  );
  const documents = session.documents.map((document) =>
    el(
      'section',
      { class: 'document', 'aria-label': document.name },
      el('h2', {}, document.name),
      document.pages.map((page) => {
        const canvas = el('canvas', { 'aria-hidden': 'true' });
        const sheet = el('div', { class: 'page', 'data-document': document.id, 'data-page': page.index, role: 'group', 'aria-label': t.page(page.index + 1, document.pageCount) }, canvas, el('div', { class: 'overlays' }));
        sheet.style.aspectRatio = `${page.width} / ${page.height}`;
        return sheet;
      }),
    ),
  );
  app.replaceChildren(
    el('section', { class: 'summary' }, el('h1', {}, session.envelope.name), el('p', { class: 'signer' }, t.signingAs(hostedSigner ?? session.signerName)), progress),
    toolbar,
    el('div', { class: 'documents' }, documents),
  );
  renderFields();
  void drawPages();
}

function renderFields() {
  const { done, total } = requiredCount();
  const progress = document.getElementById('progress');
  if (progress) progress.textContent = t.progress(done, total);
  for (const overlays of app.querySelectorAll('.overlays')) overlays.replaceChildren();
  const pages = new Map([...app.querySelectorAll('.page')].map((sheet) => [`${sheet.dataset.document}:${sheet.dataset.page}`, sheet]));
  const sizes = new Map(session.documents.flatMap((document) => document.pages.map((page) => [`${document.id}:${page.index}`, page])));
  for (const field of fieldsInOrder()) {
    for (const view of field.views) {
      const key = `${view.documentId}:${view.page}`;
      const sheet = pages.get(key);
      const size = sizes.get(key);
      if (!sheet || !size) continue;
      const box = fieldElement(field);
      box.style.left = `${(view.location.x / size.width) * 100}%`;
      box.style.top = `${(view.location.y / size.height) * 100}%`;
      box.style.width = `${(view.size.width / size.width) * 100}%`;
      box.style.height = `${(view.size.height / size.height) * 100}%`;
      box.style.setProperty('--field-color', session.recipient.color);
      sheet.querySelector('.overlays').append(box);
    }
  }
  fitTypedSignatures();
}

/**
 * A typed signature fills its box as a drawn one does, and never runs out of it: the font is
 * sized to the box's height, then shrunk until the name fits its width (a long name in a small
 * box on a phone). Measured, as only the browser knows how wide a name is in the font it has.
 */
function fitTypedSignatures() {
  for (const text of app.querySelectorAll('.field .typed')) {
    const box = text.parentElement;
    const style = getComputedStyle(box);
    const width = box.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    const height = box.clientHeight;
    if (width <= 0 || height <= 0) continue;
    text.style.lineHeight = '1';
    let size = height * 0.8;
    text.style.fontSize = `${size}px`;
    for (let attempt = 0; attempt < 3 && text.offsetWidth > width; attempt += 1) {
      size *= (width / text.offsetWidth) * 0.98;
      text.style.fontSize = `${size}px`;
    }
  }
}

function fieldName(field) {
  return field.label || field.tooltip || field.identifier;
}

function valuePreview(field) {
  const value = field.value;
  if (value === null) return el('span', { class: 'hint' }, t.fieldHint[field.type] ?? '');
  switch (field.type) {
    case 'text':
      return el('span', { class: 'text-value' }, value.text);
    case 'checkbox':
      return el('span', { class: 'check', 'aria-hidden': 'true' }, value.checked ? '✓' : '');
    case 'radio':
      return el('span', {}, field.config.options?.find((option) => option.value === value.selected)?.label ?? value.selected);
    case 'binary_choice':
      return el('span', {}, value.choice === 'accept' ? (field.config.acceptLabel ?? t.accept) : (field.config.declineLabel ?? t.declineChoice));
    case 'simple_signature':
      return value.kind === 'typed' ? el('span', { class: `typed font-${value.font}` }, value.text) : el('img', { src: value.image, alt: '' });
    case 'biometric_signature':
      return el('img', { src: value.image, alt: '' });
    default:
      return el('span', {}, JSON.stringify(value));
  }
}

function fieldElement(field) {
  const classes = ['field', `field-${field.type}`, field.required ? 'required' : '', field.value !== null ? 'filled' : '', field.readonly ? 'readonly' : ''].filter(Boolean).join(' ');
  // The accessible name starts with what the box shows (WCAG 2.5.3, label in name), then says which field it is.
  const shown = valuePreview(field).textContent.trim();
  const label = `${shown ? `${shown} – ` : ''}${fieldName(field)}${field.required ? ` (${t.required})` : ''}${field.readonly ? ` (${t.readonly})` : ''}`;
  if (field.readonly) return el('div', { class: classes, 'data-field': field.identifier, role: 'note', 'aria-label': label, title: label }, valuePreview(field));
  if (field.type === 'checkbox') {
    return el(
      'button',
      {
        type: 'button',
        class: classes,
        role: 'checkbox',
        'aria-checked': String(field.value?.checked === true),
        'aria-label': label,
        title: label,
        'data-field': field.identifier,
        onclick: () => save(field, { checked: !(field.value?.checked === true) }),
      },
      valuePreview(field),
      field.required ? el('span', { class: 'marker', 'aria-hidden': 'true' }, '*') : null,
    );
  }
  return el(
    'button',
    { type: 'button', class: classes, 'aria-label': label, title: label, 'data-field': field.identifier, onclick: () => openEditor(field) },
    valuePreview(field),
    field.required ? el('span', { class: 'marker', 'aria-hidden': 'true' }, '*') : null,
  );
}

function goToNextField() {
  const open = fieldsInOrder().filter((field) => !field.readonly);
  const next = open.find((field) => field.required && field.value === null) ?? open.find((field) => field.value === null) ?? open[0];
  if (!next) return;
  const box = app.querySelector(`[data-field="${CSS.escape(next.identifier)}"]`);
  box?.scrollIntoView({ block: 'center', behavior: 'smooth' });
  box?.focus({ preventScroll: true });
}

async function save(field, value) {
  const data = await gql(SUBMIT, { values: [{ fieldId: field.id, value }] });
  session = data.submitSigning;
  renderFields();
  app.querySelector(`[data-field="${CSS.escape(field.identifier)}"]`)?.focus();
}

/** One drawing at a time: pdf.js refuses two renders on one canvas (a resize during a locale switch). */
let drawing = Promise.resolve();
let drawingsPending = 0;
function drawPages() {
  document.body.dataset.pagesDrawn = 'false';
  drawingsPending += 1;
  drawing = drawing.then(drawPagesNow).finally(() => {
    drawingsPending -= 1;
    if (drawingsPending === 0) document.body.dataset.pagesDrawn = 'true';
  });
  return drawing;
}

async function drawPagesNow() {
  for (const document of session.documents) {
    let pdf = pdfDocuments.get(document.id);
    try {
      if (!pdf) {
        const response = await fetch(`/signing/documents/${encodeURIComponent(document.id)}`, { headers: { 'x-signing-token': token } });
        if (!response.ok) throw new Error(`document ${response.status}`);
        pdf = await pdfjs.getDocument({ data: new Uint8Array(await response.arrayBuffer()), isEvalSupported: false }).promise;
        pdfDocuments.set(document.id, pdf);
      }
      for (const sheet of app.querySelectorAll(`.page[data-document="${CSS.escape(document.id)}"]`)) {
        const page = await pdf.getPage(Number(sheet.dataset.page) + 1);
        const canvas = sheet.querySelector('canvas');
        const scale = (sheet.clientWidth * (window.devicePixelRatio || 1)) / page.getViewport({ scale: 1 }).width;
        const viewport = page.getViewport({ scale });
        canvas.width = Math.round(viewport.width);
        canvas.height = Math.round(viewport.height);
        await page.render({ canvas, viewport }).promise;
        sheet.classList.add('rendered');
      }
    } catch (error) {
      console.error('could not draw', document.name, error);
    }
  }
}

// ---------------------------------------------------------------- dialogs

function openDialog(title, body, actions, onClose) {
  const error = el('p', { class: 'error', role: 'alert' });
  const dialog = el('dialog', { class: 'editor', 'aria-labelledby': 'dialog-title' }, el('h2', { id: 'dialog-title' }, title), body, error, el('div', { class: 'actions' }, actions));
  dialog.addEventListener('close', () => {
    dialog.remove();
    onClose?.();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, fail: (message) => (error.textContent = message) };
}

/**
 * What to tell the signer about a failure, in the page's language: the service's refusals by
 * name (its own messages are English), a generic sentence for any other; the page's own checks
 * already speak the language.
 */
function errorMessage(error) {
  if (error instanceof ApiError) return t.errors[error.code] ?? t.errors.generic;
  if (error instanceof TypeError) return t.errors.generic; // the network: fetch failed
  return error.message;
}

/** Runs an action of a dialog: closes it on success, shows a translated message otherwise. */
async function attempt(handle, action) {
  try {
    await action();
    handle.dialog.close();
  } catch (error) {
    // The code's verification lapsed while the page was open: back to the code step.
    if (error instanceof ApiError && error.code === 'Signing.OtpRequired') {
      handle.dialog.close();
      void load();
      return;
    }
    handle.fail(errorMessage(error));
  }
}

function cancelButton(getHandle) {
  return el('button', { type: 'button', class: 'secondary', onclick: () => getHandle().dialog.close() }, t.cancel);
}

function openEditor(field) {
  const returnFocus = () => app.querySelector(`[data-field="${CSS.escape(field.identifier)}"]`)?.focus();
  let handle;
  const title = fieldName(field);
  if (field.type === 'text') {
    const config = field.config;
    const input = config.multiline
      ? el('textarea', { id: 'field-input', rows: 4, maxlength: config.maxLength, placeholder: config.placeholder ?? undefined })
      : el('input', { id: 'field-input', type: 'text', maxlength: config.maxLength, placeholder: config.placeholder ?? undefined, autocomplete: 'off' });
    input.value = field.value?.text ?? '';
    const submit = () =>
      attempt(handle, async () => {
        const text = input.value;
        if (text.length === 0) throw new Error(t.empty);
        if ([...text].length > config.maxLength) throw new Error(t.tooLong(config.maxLength));
        if (config.pattern && !new RegExp(`^(?:${config.pattern})$`, 'u').test(text)) throw new Error(t.patternMismatch);
        await save(field, { text });
      });
    handle = openDialog(title, el('div', {}, el('label', { for: 'field-input' }, title), input), [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', onclick: submit }, t.save)], returnFocus);
    input.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' && !config.multiline) submit();
    });
    input.focus();
    return;
  }
  if (field.type === 'radio') {
    const group = el(
      'fieldset',
      { class: 'choices' },
      el('legend', {}, title),
      (field.config.options ?? []).map((option, index) =>
        el('label', { class: 'choice' }, el('input', { type: 'radio', name: 'field-radio', value: option.value, id: `option-${index}`, checked: field.value?.selected === option.value }), option.label),
      ),
    );
    const submit = () =>
      attempt(handle, async () => {
        const selected = group.querySelector('input:checked');
        if (!selected) throw new Error(t.empty);
        await save(field, { selected: selected.value });
      });
    handle = openDialog(title, group, [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', onclick: submit }, t.save)], returnFocus);
    return;
  }
  if (field.type === 'binary_choice') {
    const choose = (choice) => attempt(handle, () => save(field, { choice }));
    handle = openDialog(title, el('p', {}, field.tooltip ?? ''), [
      cancelButton(() => handle),
      el('button', { type: 'button', class: 'secondary', 'data-choice': 'decline', onclick: () => choose('decline') }, field.config.declineLabel ?? t.declineChoice),
      el('button', { type: 'button', class: 'primary', 'data-choice': 'accept', onclick: () => choose('accept') }, field.config.acceptLabel ?? t.accept),
    ], returnFocus);
    return;
  }
  if (field.type === 'simple_signature' || field.type === 'biometric_signature') {
    openSignatureEditor(field, title, returnFocus);
  }
}

function openSignatureEditor(field, title, returnFocus) {
  const biometric = field.type === 'biometric_signature';
  const allowDrawn = biometric || field.config.allowDrawn !== false;
  const allowTyped = !biometric && field.config.allowTyped !== false;
  const pad = createSignaturePad();
  const typedInput = el('input', { id: 'typed-signature', type: 'text', maxlength: 100, autocomplete: 'name', value: session.signerName });
  const fontSelect = el('select', { id: 'typed-font' }, el('option', { value: 'cursive' }, t.fontCursive), el('option', { value: 'serif' }, t.fontSerif));
  const preview = el('p', { class: 'typed font-cursive', 'aria-hidden': 'true' }, session.signerName);
  const syncPreview = () => {
    preview.textContent = typedInput.value;
    preview.className = `typed font-${fontSelect.value}`;
  };
  typedInput.addEventListener('input', syncPreview);
  fontSelect.addEventListener('change', syncPreview);
  const drawPanel = el('div', { class: 'panel', id: 'draw-panel' }, el('p', { class: 'help', id: 'draw-help' }, t.drawHere), pad.element, el('button', { type: 'button', class: 'link', onclick: () => pad.clear() }, t.clear));
  const typePanel = el(
    'div',
    { class: 'panel', id: 'type-panel' },
    el('label', { for: 'typed-signature' }, t.typeName),
    typedInput,
    el('label', { for: 'typed-font' }, t.font),
    fontSelect,
    preview,
  );
  let mode = allowDrawn ? 'draw' : 'type';
  const tabs = el('div', { class: 'tabs', role: 'tablist' });
  const showMode = (next) => {
    mode = next;
    drawPanel.hidden = mode !== 'draw';
    typePanel.hidden = mode !== 'type';
    for (const tab of tabs.children) tab.setAttribute('aria-selected', String(tab.dataset.mode === mode));
  };
  if (allowDrawn && allowTyped) {
    tabs.append(
      el('button', { type: 'button', role: 'tab', 'data-mode': 'draw', onclick: () => showMode('draw') }, t.draw),
      el('button', { type: 'button', role: 'tab', 'data-mode': 'type', onclick: () => showMode('type') }, t.type),
    );
  }
  let handle;
  const submit = () =>
    attempt(handle, async () => {
      if (mode === 'type') {
        if (typedInput.value.trim() === '') throw new Error(t.typeFirst);
        await save(field, { kind: 'typed', text: typedInput.value.trim(), font: fontSelect.value });
        return;
      }
      if (pad.strokes.length === 0) throw new Error(t.drawFirst);
      const image = pad.image();
      await save(field, biometric ? { image, strokes: pad.strokes } : { kind: 'drawn', image });
    });
  handle = openDialog(
    title,
    el('div', { class: 'signature-editor' }, tabs, allowDrawn ? drawPanel : null, allowTyped ? typePanel : null),
    [cancelButton(() => handle), el('button', { type: 'button', class: 'primary', id: 'save-signature', onclick: submit }, t.save)],
    returnFocus,
  );
  showMode(mode);
  pad.fit();
}

/**
 * A drawing surface that keeps what Pointer Events report, per point: position (CSS pixels from
 * the top-left), time (ms since the first touch), pressure (0–1) and pointer type, in stroke order. A mouse
 * reports 0.5 while pressed; a pen or finger its own pressure.
 */
function createSignaturePad() {
  const canvas = el('canvas', { class: 'signature-pad', 'aria-describedby': 'draw-help', tabindex: '0' });
  const context = canvas.getContext('2d');
  const strokes = [];
  let current = null;
  let origin = null;
  let lastT = 0;
  const point = (event) => {
    const box = canvas.getBoundingClientRect();
    if (origin === null) origin = event.timeStamp;
    const tValue = Math.max(lastT, Math.round((event.timeStamp - origin) * 10) / 10);
    lastT = tValue;
    const pressure = event.pressure > 0 ? event.pressure : 0.5;
    const sample = { x: Math.round((event.clientX - box.left) * 10) / 10, y: Math.round((event.clientY - box.top) * 10) / 10, t: tValue, p: Math.min(1, Math.round(pressure * 1000) / 1000) };
    return ['mouse', 'pen', 'touch'].includes(event.pointerType) ? { ...sample, pointerType: event.pointerType } : sample;
  };
  const segment = (from, to) => {
    const ratio = canvas.width / canvas.getBoundingClientRect().width || 1;
    context.lineCap = 'round';
    context.lineJoin = 'round';
    context.strokeStyle = '#111827';
    context.lineWidth = (1 + to.p * 3) * ratio;
    context.beginPath();
    context.moveTo(from.x * ratio, from.y * ratio);
    context.lineTo(to.x * ratio, to.y * ratio);
    context.stroke();
  };
  canvas.addEventListener('pointerdown', (event) => {
    event.preventDefault();
    try {
      canvas.setPointerCapture(event.pointerId);
    } catch {
      // A synthetic or already released pointer cannot be captured; drawing still works.
    }
    const first = point(event);
    current = [first];
    strokes.push(current);
    segment(first, first);
  });
  canvas.addEventListener('pointermove', (event) => {
    if (!current) return;
    const events = typeof event.getCoalescedEvents === 'function' && event.getCoalescedEvents().length > 0 ? event.getCoalescedEvents() : [event];
    for (const sample of events) {
      const next = point(sample);
      segment(current[current.length - 1], next);
      current.push(next);
    }
  });
  const end = () => {
    current = null;
  };
  canvas.addEventListener('pointerup', end);
  canvas.addEventListener('pointercancel', end);
  return {
    element: canvas,
    strokes,
    fit() {
      const ratio = window.devicePixelRatio || 1;
      const box = canvas.getBoundingClientRect();
      canvas.width = Math.max(1, Math.round(box.width * ratio));
      canvas.height = Math.max(1, Math.round(box.height * ratio));
    },
    /** The drawing as a PNG, cut to the strokes (with a margin) so that it fills its box on the page and in the PDF. */
    image() {
      const ratio = canvas.width / canvas.getBoundingClientRect().width || 1;
      const points = strokes.flat();
      const margin = 6;
      const left = Math.max(0, (Math.min(...points.map((p) => p.x)) - margin) * ratio);
      const top = Math.max(0, (Math.min(...points.map((p) => p.y)) - margin) * ratio);
      const right = Math.min(canvas.width, (Math.max(...points.map((p) => p.x)) + margin) * ratio);
      const bottom = Math.min(canvas.height, (Math.max(...points.map((p) => p.y)) + margin) * ratio);
      const cut = document.createElement('canvas');
      cut.width = Math.max(1, Math.round(right - left));
      cut.height = Math.max(1, Math.round(bottom - top));
      cut.getContext('2d').drawImage(canvas, left, top, cut.width, cut.height, 0, 0, cut.width, cut.height);
      return cut.toDataURL('image/png');
    },
    clear() {
      strokes.length = 0;
      origin = null;
      lastT = 0;
      context.clearRect(0, 0, canvas.width, canvas.height);
    },
  };
}

function openFinish() {
  const missing = session.requiredFieldIds.length;
  if (missing > 0) {
    const status = document.getElementById('progress');
    if (status) status.textContent = `${t.progress(requiredCount().done, requiredCount().total)} · ${t.missing(missing)}`;
    goToNextField();
    return;
  }
  let handle;
  const consent = t.consent;
  handle = openDialog(t.confirmTitle, el('p', { id: 'consent-text' }, consent), [
    cancelButton(() => handle),
    el(
      'button',
      {
        type: 'button',
        class: 'primary',
        id: 'confirm-signing',
        onclick: () =>
          attempt(handle, async () => {
            const data = await closingAction(() => gql(SUBMIT, { values: [], complete: true, consent }));
            session = data.submitSigning;
            show(screenOf(session));
          }),
      },
      t.confirm,
    ),
  ]);
}

/** A delegator hands the role to another person, who is invited; this link stops working. */
function openDelegate() {
  const name = el('input', { id: 'delegate-name', type: 'text', maxlength: 200, autocomplete: 'off' });
  const email = el('input', { id: 'delegate-email', type: 'email', maxlength: 254, autocomplete: 'off' });
  let handle;
  handle = openDialog(
    t.delegateTitle,
    el('div', {}, el('p', {}, t.delegateText), el('label', { for: 'delegate-name' }, t.delegateName), name, el('label', { for: 'delegate-email' }, t.delegateEmail), email),
    [
      cancelButton(() => handle),
      el(
        'button',
        {
          type: 'button',
          class: 'primary',
          id: 'confirm-delegate',
          onclick: () =>
            attempt(handle, async () => {
              if (name.value.trim() === '' || email.value.trim() === '') throw new Error(t.empty);
              await closingAction(() => gql(DELEGATE, { person: { name: name.value.trim(), email: email.value.trim(), locale } }));
              show('delegated');
            }),
        },
        t.delegateConfirm,
      ),
    ],
  );
  name.focus();
}

function openDecline() {
  const reason = el('textarea', { id: 'decline-reason', rows: 3, maxlength: 500, required: true });
  let handle;
  handle = openDialog(t.declineTitle, el('div', {}, el('p', {}, t.declineText), el('label', { for: 'decline-reason' }, t.reason), reason), [
    cancelButton(() => handle),
    el(
      'button',
      {
        type: 'button',
        class: 'danger',
        id: 'confirm-decline',
        onclick: () =>
          attempt(handle, async () => {
            if (reason.value.trim() === '') throw new Error(t.empty);
            await closingAction(() => gql(DECLINE, { reason: reason.value.trim() }));
            show('declined');
          }),
      },
      t.declineConfirm,
    ),
  ]);
  reason.focus();
}

// A page drawn for one width is drawn again for another (a phone turned, a window resized).
let resizeTimer = 0;
let drawnWidth = window.innerWidth;
window.addEventListener('resize', () => {
  if (screen === 'signing') fitTypedSignatures();
  clearTimeout(resizeTimer);
  resizeTimer = setTimeout(() => {
    if (screen !== 'signing' || window.innerWidth === drawnWidth) return;
    drawnWidth = window.innerWidth;
    void drawPages();
  }, 200);
});

setLocale(pickLocale(null));
void load();
