/**
 * For loops of CPU work on one request (checking hundreds of fields, say): returns a function to
 * await between items that gives the event loop back once the loop has held it for `sliceMs`,
 * so other requests (and /healthz) are answered in between. Cheap when no time has passed.
 */
export function createEventLoopYielder(sliceMs = 10): () => Promise<void> {
  let sliceStartedAt = performance.now();
  return async () => {
    if (performance.now() - sliceStartedAt < sliceMs) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    sliceStartedAt = performance.now();
  };
}
