// The one-time code step.
//
// A person with a phone confirms it is them before signing (docs/reference/contract.md §7): the session says
// whether a code is needed (`otp.required`) and verified. The step asks for a code, takes the 6
// digits (the phone's keyboard offers the code from the message: autocomplete="one-time-code"),
// and counts down until a new code may be asked for. Nothing here ever sees the code but the input.
import { ApiError, requestSigningOtp, verifySigningOtp } from '../api.js';
import { app, el } from '../dom.js';
import { errorScreen, load, render, show } from '../flow.js';
import { currentSession, state } from '../store.js';

/** @import { ErrorContext, Session } from '../types.js' */

/**
 * The code step's own state, kept across re-renders (a language switch) and reset per link.
 * `resendAt` is on this device's clock, from the service's "in N seconds" (never its timestamps:
 * a phone's clock may be off by minutes).
 * @type {{ token: string | null, sentTo: string | null, resendAt: number, message: string, timer: ReturnType<typeof setInterval> | undefined, session: Session | null }}
 */
const otpStep = { token: null, sentTo: null, resendAt: 0, message: '', timer: undefined, session: null };

function otpStepState() {
  const session = currentSession();
  if (otpStep.token !== state.token) Object.assign(otpStep, { token: state.token, sentTo: null, resendAt: 0, message: '', session: null });
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

/**
 * The explanation of a refusal of the code step, in the page's language, if it has one.
 * @param {unknown} error
 * @returns {((context: ErrorContext) => string) | undefined}
 */
function otpExplanation(error) {
  return error instanceof ApiError ? /** @type {Record<string, ((context: ErrorContext) => string) | undefined>} */ (state.t.otpErrors)[/** @type {string} */ (error.code)] : undefined;
}

/** @param {unknown} error */
function otpErrorText(error) {
  const explain = otpExplanation(error);
  return explain ? explain(/** @type {ApiError} */ (error).context) : /** @type {Error} */ (error).message;
}

export function renderVerify() {
  const { t } = state;
  const session = currentSession();
  const step = otpStepState();
  const otp = session.otp;
  const codeAsked = step.sentTo !== null || step.resendAt > 0;
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
    'aria-invalid': step.message ? 'true' : undefined,
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
      el('p', { id: 'otp-status', role: 'status' }, step.sentTo ? t.otpSent(step.sentTo) : ''),
      form,
      el('p', { id: 'otp-error', class: 'error', role: 'alert' }, step.message),
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
    const { t } = state;
    const button = /** @type {HTMLButtonElement | null} */ (document.getElementById('otp-send'));
    if (state.screen !== 'verify' || !button) {
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
    const sent = await requestSigningOtp();
    otpStep.sentTo = sent.maskedPhone;
    otpStep.resendAt = Date.now() + sent.resendInSeconds * 1000;
    otpStep.message = '';
  } catch (error) {
    if (error instanceof ApiError && error.code === 'Signing.OtpRateLimited') otpStep.resendAt = Date.now() + error.context.retryAfterSeconds * 1000;
    if (!otpExplanation(error)) {
      show(errorScreen(error));
      return;
    }
    otpStep.message = otpErrorText(error);
  }
  render();
}

/** @param {string} value */
async function verifyCode(value) {
  // As the service reads it (otp.service.ts normalizeOtpInput): fullwidth digits folded, spaces, dashes and invisible marks dropped.
  const code = value.normalize('NFKC').replace(/[\s\p{Pd}\u2212\p{Cf}]+/gu, '');
  if (!/^[0-9]{6}$/.test(code)) {
    otpStep.message = state.t.otpSixDigits;
    render();
    return;
  }
  try {
    await verifySigningOtp(code);
    otpStep.message = '';
    await load();
  } catch (error) {
    if (!otpExplanation(error)) {
      show(errorScreen(error));
      return;
    }
    otpStep.message = otpErrorText(error);
    // A used code (a second click): the session says whether the link is verified.
    if (error instanceof ApiError && error.code === 'Signing.OtpAlreadyUsed') await load();
    else render();
  }
}
