// The signature pad: a canvas that draws what the pointer does and keeps every sample.
import { el } from './dom.js';
/** @import { PenPoint } from './types.js' */

/**
 * A drawing surface that keeps what Pointer Events report, per point: position (CSS pixels from
 * the top-left), time (ms since the first touch), pressure (0–1) and pointer type, in stroke order. A mouse
 * reports 0.5 while pressed; a pen or finger its own pressure.
 */
export function createSignaturePad() {
  const canvas = el('canvas', { class: 'signature-pad', 'aria-describedby': 'draw-help', tabindex: '0' });
  const context = /** @type {CanvasRenderingContext2D} */ (canvas.getContext('2d'));
  /** @type {PenPoint[][]} */
  const strokes = [];
  /** @type {PenPoint[] | null} */
  let current = null;
  /** @type {number | null} */
  let origin = null;
  let lastT = 0;
  /**
   * @param {PointerEvent} event
   * @returns {PenPoint}
   */
  const point = (event) => {
    const box = canvas.getBoundingClientRect();
    if (origin === null) origin = event.timeStamp;
    const tValue = Math.max(lastT, Math.round((event.timeStamp - origin) * 10) / 10);
    lastT = tValue;
    const pressure = event.pressure > 0 ? event.pressure : 0.5;
    const sample = { x: Math.round((event.clientX - box.left) * 10) / 10, y: Math.round((event.clientY - box.top) * 10) / 10, t: tValue, p: Math.min(1, Math.round(pressure * 1000) / 1000) };
    return ['mouse', 'pen', 'touch'].includes(event.pointerType) ? { ...sample, pointerType: event.pointerType } : sample;
  };
  /**
   * @param {PenPoint} from
   * @param {PenPoint} to
   */
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
    /** Sizes the canvas's pixels to its box on screen (once the dialog shows it). */
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
      /** @type {CanvasRenderingContext2D} */ (cut.getContext('2d')).drawImage(canvas, left, top, cut.width, cut.height, 0, 0, cut.width, cut.height);
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
