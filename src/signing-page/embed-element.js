// The integrator's drop-in, served by the service at GET /embed.js (never by another host), for
// the integrator's own pages: `<envelope-signing url="…signing URL…"></envelope-signing>` shows
// the signing page in a frame and re-dispatches what the page tells its host (ready, field_saved,
// completed, declined, delegated, error) as DOM events of the element, each with the message as
// `detail` ({ type, event, envelopeId, recipientId }). Not a module of the signing page itself.
//
// When the page does not say `ready` within `ready-timeout` seconds (default 20) of the frame being
// made, the element dispatches `error` itself, with `detail.reason: 'ready_timeout'`: the usual
// cause is a browser that refused to show the page in this frame (this origin is not the signing
// URL's frame origin), where the page never runs and could not tell anyone. The URL is then still
// unused: the page consumes it only once it runs.

/** The frame may run the page's own scripts on the service's origin and download the signed copy; nothing else. */
const SANDBOX = 'allow-scripts allow-same-origin allow-downloads';
/** The page needs no device or powerful feature: every one is refused to it explicitly. */
const ALLOW = "camera 'none'; microphone 'none'; geolocation 'none'; payment 'none'; usb 'none'; serial 'none'; bluetooth 'none'";
const EVENTS = ['ready', 'field_saved', 'completed', 'declined', 'delegated', 'error'];
/** Seconds the page has to say `ready` before the element reports `error` (the `ready-timeout` attribute). */
const DEFAULT_READY_TIMEOUT_SECONDS = 20;

const STYLE = `:host { display: block; height: var(--envelope-signing-height, 85vh); min-height: 420px; }
iframe { display: block; width: 100%; height: 100%; border: 0; }`;

class EnvelopeSigningElement extends HTMLElement {
  static get observedAttributes() {
    return ['url', 'height', 'ready-timeout'];
  }

  /** @type {HTMLIFrameElement | null} */
  #frame = null;
  /** @type {string | null} */
  #origin = null;
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  #readyTimer = undefined;

  constructor() {
    super();
    const root = this.attachShadow({ mode: 'open' });
    const style = document.createElement('style');
    style.textContent = STYLE;
    root.append(style);
    this.onMessage = this.onMessage.bind(this);
  }

  connectedCallback() {
    window.addEventListener('message', this.onMessage);
    this.#render();
  }

  disconnectedCallback() {
    window.removeEventListener('message', this.onMessage);
    this.#stopWaiting();
  }

  /** @param {string} name */
  attributeChangedCallback(name) {
    if (name === 'height') this.#size();
    // A new wait only for a frame not yet ready: a frame's readiness ends its wait for good.
    else if (name === 'ready-timeout') {
      if (this.#readyTimer !== undefined) this.#waitForReady();
    } else if (this.isConnected) this.#render();
  }

  /** A `height` attribute (CSS length, e.g. `700px`) sizes the frame; else the element's own height (85vh by default). */
  #size() {
    const height = this.getAttribute('height');
    if (height) this.style.setProperty('--envelope-signing-height', /^\d+$/.test(height) ? `${height}px` : height);
    else this.style.removeProperty('--envelope-signing-height');
  }

  #render() {
    this.#size();
    const url = this.#signingUrl();
    if (!url) {
      this.#frame?.remove();
      this.#frame = null;
      this.#origin = null;
      this.#stopWaiting();
      return;
    }
    // A new URL is a new session: a new frame (a URL works once, the old frame's page is done).
    if (this.#frame && this.#frame.src === url.href) return;
    this.#frame?.remove();
    const frame = document.createElement('iframe');
    frame.setAttribute('sandbox', SANDBOX);
    frame.setAttribute('allow', ALLOW);
    frame.setAttribute('referrerpolicy', 'no-referrer');
    frame.setAttribute('title', this.getAttribute('title') ?? 'Signing');
    frame.src = url.href;
    this.#frame = frame;
    this.#origin = url.origin;
    /** @type {ShadowRoot} */ (this.shadowRoot).append(frame);
    this.#waitForReady();
  }

  /** The `ready-timeout` attribute in seconds (a positive number), else the default. */
  #readyTimeoutMs() {
    const seconds = Number(this.getAttribute('ready-timeout'));
    return (Number.isFinite(seconds) && seconds > 0 ? seconds : DEFAULT_READY_TIMEOUT_SECONDS) * 1000;
  }

  /** Reports `error` (reason `ready_timeout`) when this frame's page does not say `ready` in time. */
  #waitForReady() {
    this.#stopWaiting();
    const frame = this.#frame;
    this.#readyTimer = setTimeout(() => {
      this.#readyTimer = undefined;
      if (frame !== this.#frame) return;
      const detail = { type: 'envelope-signing', event: 'error', reason: 'ready_timeout', envelopeId: null, recipientId: null };
      this.dispatchEvent(new CustomEvent('error', { detail, bubbles: true, composed: true }));
    }, this.#readyTimeoutMs());
  }

  #stopWaiting() {
    if (this.#readyTimer !== undefined) clearTimeout(this.#readyTimer);
    this.#readyTimer = undefined;
  }

  /** The `url` attribute, when it is an http(s) URL. */
  #signingUrl() {
    const value = this.getAttribute('url');
    if (!value) return null;
    try {
      const url = new URL(value, location.href);
      return url.protocol === 'https:' || url.protocol === 'http:' ? url : null;
    } catch {
      return null;
    }
  }

  /**
   * Only messages from this element's own frame and the signing service's origin count: another
   * frame or window cannot make the element fire.
   * @param {MessageEvent} message
   */
  onMessage(message) {
    if (!this.#frame || message.source !== this.#frame.contentWindow || message.origin !== this.#origin) return;
    const data = message.data;
    if (!data || typeof data !== 'object' || data.type !== 'envelope-signing' || !EVENTS.includes(data.event)) return;
    // The page speaks: whatever it says (ready, or its own error), the element's wait is over.
    this.#stopWaiting();
    const detail = { type: data.type, event: data.event, envelopeId: data.envelopeId ?? null, recipientId: data.recipientId ?? null };
    this.dispatchEvent(new CustomEvent(data.event, { detail, bubbles: true, composed: true }));
  }
}

if (!customElements.get('envelope-signing')) customElements.define('envelope-signing', EnvelopeSigningElement);
