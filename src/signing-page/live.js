// Following the envelope live: `signingSessionChanged` over GraphQL over SSE (api.js opens the
// stream), one stream at a time, for the token the page acts with. What an event means for the
// screen is flow.js's business.
import { openLiveStream } from './api.js';
import { state } from './store.js';

/** @type {{ token: string, controller: AbortController } | null} */
let watching = null;

/**
 * Opens the stream for the current token, unless it is open already. `onEvent` runs for each
 * event; `onEnd` when the stream ends (or fails) without stopFollowing() having ended it.
 * @param {{ onEvent: () => void, onEnd: () => void }} handlers
 */
export function follow({ onEvent, onEnd }) {
  if (watching?.token === state.token) return;
  watching?.controller.abort();
  const controller = new AbortController();
  watching = { token: state.token, controller };
  void (async () => {
    try {
      const response = await openLiveStream(controller.signal);
      const reader = /** @type {NonNullable<Response['body']>} */ (response.body).pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let end = buffer.indexOf('\n\n'); end !== -1; end = buffer.indexOf('\n\n')) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          if (/^event:\s*next/m.test(block)) onEvent();
        }
      }
    } catch {
      // Aborted, or the connection dropped: the next load watches again.
    }
    if (watching?.controller === controller) {
      watching = null;
      onEnd();
    }
  })();
}

/** Ends the stream, if one is open; its onEnd does not run. */
export function stopFollowing() {
  watching?.controller.abort();
  watching = null;
}
