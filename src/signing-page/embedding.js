// Embedded signing (issue 21): when the page runs in a frame of the integrator's application, it
// tells the host page what happens (postMessage to the frame origin of its session only, never
// '*'), and after the signer's last action it goes to the integrator's return URL.
import { state } from './store.js';

/** @typedef {'ready' | 'field_saved' | 'completed' | 'declined' | 'delegated' | 'error'} HostEvent */
/** @typedef {'signing_complete' | 'declined' | 'delegated' | 'session_expired'} ReturnEvent */

function framed() {
  return window.parent !== window;
}

/**
 * Tells the host page: `{ type: 'envelope-signing', event, envelopeId, recipientId }`, to the
 * session's frame origin only (a page framed by any other origin is refused by the browser
 * before it runs, CSP frame-ancestors; without a frame origin nothing is posted).
 * @param {HostEvent} event
 */
export function tellHost(event) {
  const target = state.embedding.frameOrigin;
  if (!framed() || !target) return;
  const session = state.session;
  window.parent.postMessage({ type: 'envelope-signing', event, envelopeId: session?.envelope.id ?? null, recipientId: session?.recipient.id ?? null }, target);
}

/**
 * After completing, declining or delegating (or when the session ended), goes to the return URL
 * with what happened: in a frame, the frame goes there (the host page decides what to show); on
 * its own, the window does. Answers whether it did (no return URL: the page shows its own screen).
 * @param {ReturnEvent} event
 */
export function returnToIntegrator(event) {
  const base = state.embedding.returnUrl;
  if (!base || state.hostedSigner) return false;
  const url = new URL(base);
  url.searchParams.set('event', event);
  const envelopeId = state.session?.envelope.id;
  if (envelopeId) url.searchParams.set('envelopeId', envelopeId);
  // The frame's name may hold the session credential (store.js): the integrator's page must not inherit it.
  if (window.name.startsWith('envelope-signing:')) window.name = '';
  // A short pause lets the host page's message listener run before the frame leaves.
  setTimeout(() => location.assign(url.toString()), 150);
  return true;
}
