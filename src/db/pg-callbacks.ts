import type pg from 'pg';

/**
 * Makes a pooled connection answer every statement through pg's callback, also when its caller
 * asks for a promise (Kysely, and so the ORM, call `client.query(text, values)` and await it). On
 * pg's own promise path each answer's rows outlived young-generation collections until the next
 * full one; through the callback, as `pool.query` itself calls the client, they die young
 * (docs/decisions.md, "Young garbage dies young"; docs/performance.md, "What survived young
 * collections"). The promise and its errors are pg's: the rows of the same result, and a
 * failure's stack captured where it is awaited, as pg does. Calls that bring their own callback,
 * and submittables (a cursor), pass through untouched.
 */
export function answerThroughCallbacks(client: pg.Client): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const first = args[0];
    if (args.length === 0 || typeof args[args.length - 1] === 'function' || (typeof first === 'object' && first !== null && typeof (first as { submit?: unknown }).submit === 'function')) {
      return query(...args);
    }
    return new Promise((resolve, reject) => {
      query(...args, (error: Error | null, result: unknown) => (error ? reject(error) : resolve(result)));
    }).catch((error: unknown) => {
      // As pg's promise path: the stack leads back to whoever awaited the statement, not to the socket.
      if (error instanceof Error) Error.captureStackTrace(error);
      throw error;
    });
  };
}
