/**
 * Bulk send against hostile input and races (issue 31): every error answer is bounded (lists cut
 * to their first 100 with a count of the rest, no answer over 64 KB, on both faces); the CSV
 * parser stops at its limits while reading and gives the event loop its turns; NUL and lone
 * surrogates are `Request.Invalid`, never a 500; and cancelling a running bulk send never
 * deadlocks with the job's step.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { BULK_SEND_CSV_LIMITS } from '../src/domain/bulk-send/bulk-send.service.ts';
import { CsvSyntaxError, CsvTooManyRecordsError, parseCsvTable } from '../src/domain/bulk-send/csv.ts';
import { OUTBOX_TOPICS } from '../src/domain/outbox/topics.ts';
import { createErrorMask } from '../src/graphql/errors.ts';
import { errorAnswer } from '../src/http/contract-body.ts';
import { DomainError } from '../src/shared/errors.ts';

/** No error answer may be larger (docs/errors.md). */
const MAX_ERROR_ANSWER_BYTES = 64 * 1024;

import { createLogger } from '../src/shared/logger.ts';
import { mainJobHandlers } from '../src/workers.ts';
import { eventually } from './helpers/eventually.ts';
import { graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { createReadyTemplate } from './helpers/templates.ts';
import { mainWorkerFor, workerDependencies } from './helpers/workers.ts';

let app: TestApp;

beforeAll(async () => {
  app = await startTestApp({ env: { BULK_SEND_ROWS_PER_MINUTE: '0', RATE_LIMIT_PER_MINUTE: '100000' }, rateLimitsOwnCounters: true });
});
afterAll(async () => {
  await app?.close();
});

function callerOf(team: SeededTeam) {
  return { team, rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}
type Caller = ReturnType<typeof callerOf>;

const createMutation = `mutation($t: ID!, $input: CreateBulkSendInput!) { createBulkSend(templateId: $t, input: $input) { id status total } }`;

/** A CSV file posted as the multipart form's `csv` part: the answer's status, its size in bytes, and its body. */
async function postCsv(caller: Caller, templateId: string, text: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  form.append('csv', new Blob([Buffer.from(text, 'utf8')], { type: 'text/csv' }), 'rows.csv');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const response = await fetch(`${app.url}/api/v1/key/templates/${templateId}/bulk-sends`, { method: 'POST', headers: { 'x-service-api-key': caller.team.apiKey }, body: form });
  const raw = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(raw), body: JSON.parse(raw) as any };
}

/** A GraphQL operation, with the answer's size in bytes. */
async function graphqlSized(caller: Caller, query: string, variables: Record<string, unknown>) {
  const response = await fetch(`${app.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', 'x-service-api-key': caller.team.apiKey },
    body: JSON.stringify({ query, variables }),
  });
  const raw = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(raw), body: JSON.parse(raw) as any };
}

async function restSized(caller: Caller, path: string, body: unknown) {
  const response = await fetch(`${app.url}/api/v1/key${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-service-api-key': caller.team.apiKey },
    body: JSON.stringify(body),
  });
  const raw = await response.text();
  return { status: response.status, bytes: Buffer.byteLength(raw), body: JSON.parse(raw) as any };
}

describe('error answers are bounded', () => {
  it('a CSV header of 262,144 or 1,048,576 commas: one issue at the column limit, a small answer, on both faces', async () => {
    const caller = callerOf(await seedTeam(app));
    const { templateId } = await createReadyTemplate(app, caller.team.apiKey);
    for (const commas of [262_144, 1_048_576]) {
      const answer = await postCsv(caller, templateId, `${','.repeat(commas)}\n`);
      expect(answer.status).toBe(400);
      expect(answer.body.error.name).toBe('Request.Invalid');
      expect(answer.body.error.context.issues).toEqual([{ path: 'csv (line 1)', message: 'a record may have at most 1,250 fields' }]);
      expect(answer.bytes).toBeLessThan(MAX_ERROR_ANSWER_BYTES);
    }
    const graphql = await graphqlSized(caller, createMutation, { t: templateId, input: { csv: `${','.repeat(262_144)}\n` } });
    expect(graphql.body.errors[0].extensions).toMatchObject({ code: 'Request.Invalid', context: { issues: [{ path: 'csv (line 1)', message: 'a record may have at most 1,250 fields' }] } });
    expect(graphql.bytes).toBeLessThan(MAX_ERROR_ANSWER_BYTES);
    // Under the column limit, one issue per unknown column: the first 100 listed, the rest counted.
    const wide = await postCsv(caller, templateId, `${Array.from({ length: 1_200 }, (_, index) => `nobody${index}.email`).join(',')}\n`);
    expect(wide.body.error.context.issues).toHaveLength(100);
    expect(wide.body.error.context.issuesOmitted).toBe(1_100);
    expect(wide.bytes).toBeLessThan(MAX_ERROR_ANSWER_BYTES);
    expect((await caller.rest.get('/bulk-sends')).body.payload.bulkSends).toEqual([]);
  }, 60_000);

  it('a header followed by a million blank lines stops at the record limit: BulkSend.TooManyRows, nothing created', async () => {
    const caller = callerOf(await seedTeam(app));
    const { templateId } = await createReadyTemplate(app, caller.team.apiKey);
    const answer = await postCsv(caller, templateId, `buyer.name,buyer.email\n${'\n'.repeat(1_000_000)}`);
    expect(answer.status).toBe(422);
    expect(answer.body.error).toMatchObject({ name: 'BulkSend.TooManyRows', context: { limit: 1000 } });
    // GraphQL: the body's 1 MB holds 400,000 blank lines.
    const graphql = await graphqlSized(caller, createMutation, { t: templateId, input: { csv: `buyer.name,buyer.email\n${'\n'.repeat(400_000)}` } });
    expect(graphql.body.errors[0].extensions).toMatchObject({ code: 'BulkSend.TooManyRows', context: { limit: 1000 } });
    expect((await caller.rest.get('/bulk-sends')).body.payload.bulkSends).toEqual([]);
  }, 60_000);

  it('1,000 invalid rows of many problems each: the first 100 rows and issues, the rest counted, under 64 KB on both faces', async () => {
    const caller = callerOf(await seedTeam(app));
    const { templateId } = await createReadyTemplate(app, caller.team.apiKey);
    const values = Object.fromEntries(Array.from({ length: 20 }, (_, index) => [`u${index}`, 1]));
    const rows = Array.from({ length: 1_000 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: { name: `P ${index}`, email: `p${index}@example.com` } }] }], values }));
    const rest = await restSized(caller, `/templates/${templateId}/bulk-sends`, { rows });
    expect(rest.status).toBe(400);
    const context = rest.body.error.context;
    expect(rest.body.error.name).toBe('Request.Invalid');
    expect(rest.bytes).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    expect(context.invalidRows).toBe(1_000);
    // At most the first 100 (fewer when the answer had to be cut further to fit), the rest counted.
    expect(context.rows.length).toBeLessThanOrEqual(100);
    expect(context.rows.length).toBeGreaterThan(0);
    expect(context.rows.length + context.rowsOmitted).toBe(1_000);
    expect(context.rows[0]).toMatchObject({ index: 0 });
    expect(context.issues.length).toBeLessThanOrEqual(100);
    expect(context.issues[0]).toEqual({ path: 'rows[0].values.u0', message: 'names no field of the template' });
    expect(context.issuesOmitted).toBe(20_000 - context.issues.length);
    const graphql = await graphqlSized(caller, createMutation, { t: templateId, input: { rows } });
    const graphqlContext = graphql.body.errors[0].extensions.context;
    expect(graphql.body.errors[0].extensions.code).toBe('Request.Invalid');
    expect(graphqlContext.invalidRows).toBe(1_000);
    expect(graphqlContext.rows.length + graphqlContext.rowsOmitted).toBe(1_000);
    expect(graphqlContext.issues.length + graphqlContext.issuesOmitted).toBe(20_000);
    expect(graphql.bytes).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
  }, 60_000);

  it('a sibling: 500 invalid fields in one batch list their first 100 issues and count the rest', async () => {
    const caller = callerOf(await seedTeam(app));
    const ready = await createReadyTemplate(app, caller.team.apiKey);
    const fields = Array.from({ length: 500 }, (_, index) => ({
      type: 'text',
      recipientId: ready.signerId,
      identifier: `f${index}`,
      views: [{ documentId: ready.documentId, page: -1, location: { x: -5, y: 0 }, size: { width: 10, height: 10 } }],
    }));
    const answer = await restSized(caller, `/templates/${ready.templateId}/fields`, { fields });
    expect(answer.status).toBe(400);
    expect(answer.body.error.context.issues).toHaveLength(100);
    expect(answer.body.error.context.issuesOmitted).toBeGreaterThan(0);
    expect(answer.bytes).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
  }, 60_000);

  it('GraphQL answers of many errors, or errors quoting long input, stay under 64 KB', async () => {
    const caller = callerOf(await seedTeam(app));
    const post = async (body: unknown) => {
      const response = await fetch(`${app.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json, application/json', 'x-service-api-key': caller.team.apiKey },
        body: JSON.stringify(body),
      });
      const raw = await response.text();
      return { bytes: Buffer.byteLength(raw), body: JSON.parse(raw) as any };
    };
    // 90 unknown fields, each named with 10,000 characters: 90 validation errors quoting them.
    const names = Array.from({ length: 90 }, (_, index) => `f${index}${'x'.repeat(10_000)}`);
    const many = await post({ query: `{ ${names.join(' ')} }` });
    expect(many.bytes).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    expect(many.body.errors.length).toBeGreaterThan(0);
    expect(many.body.errors.length + many.body.extensions.errorsOmitted).toBe(90);
    // A refused variable value quoted whole by graphql-js, and an unexpected 900 KB string literal.
    const quoted = await post({ query: createMutation, variables: { t: '00000000-0000-4000-8000-000000000000', input: { skipInvalidRows: 'y'.repeat(900_000), rows: [] } } });
    expect(quoted.bytes).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    expect(quoted.body.errors[0].message).toContain('skipInvalidRows');
    const literal = await post({ query: `{ "${'z'.repeat(900_000)}" }` });
    expect(literal.bytes).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    expect(literal.body.errors[0].message).toContain('Syntax Error');
  }, 60_000);

  it('the last guard: an error holding more than 64 KB is fitted under it by both faces', () => {
    // Past every list cap the error base applies: 200 keys of 1,000 characters, a list of long texts,
    // and a description of control characters (each 6 bytes once escaped).
    const context = Object.fromEntries(Array.from({ length: 200 }, (_, index) => [`key${index}`, 'x'.repeat(5_000)]));
    const error = new DomainError('Request.Invalid', '\u0001'.repeat(100_000), {
      issues: Array.from({ length: 100_000 }, (_, index) => ({ path: `p${index}`, message: 'm'.repeat(5_000) })),
      ...context,
    });
    const rest = errorAnswer(error, { requestId: 'r-1', alwaysHttp200: false });
    expect(Buffer.byteLength(rest.body)).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    const restBody = JSON.parse(rest.body);
    expect(restBody.error).toMatchObject({ name: 'Request.Invalid', context: { requestId: 'r-1', contextTrimmed: true } });
    const masked = createErrorMask(createLogger('silent'))(error);
    const graphql = JSON.stringify({ errors: [masked] });
    expect(Buffer.byteLength(graphql)).toBeLessThanOrEqual(MAX_ERROR_ANSWER_BYTES);
    expect(JSON.parse(graphql).errors[0].extensions).toMatchObject({ code: 'Request.Invalid', context: { contextTrimmed: true } });
    // Lists are cut where the error is made, whatever builds it: the first 100, the rest counted.
    expect((error.context.issues as unknown[]).length).toBe(100);
    expect(error.context.issuesOmitted).toBe(99_900);
    expect((error.context.key0 as string).length).toBeLessThanOrEqual(1_001);
  });
});

describe('the CSV parser stops at its limits while reading', () => {
  const limits = BULK_SEND_CSV_LIMITS;
  const problem = async (text: string) => {
    try {
      await parseCsvTable(text, limits);
    } catch (error) {
      if (error instanceof CsvSyntaxError) return error.problem;
      if (error instanceof CsvTooManyRecordsError) return { records: error.limit };
      throw error;
    }
    return undefined;
  };
  it('columns, field length, record length and records (blank lines counted) end the reading where they are passed', async () => {
    // Each file is broken after the limit (an unclosed quote): the limit is what is reported, so nothing past it was read.
    const broken = '\n"never closed';
    expect(await problem(`${'a,'.repeat(1_250)}a${broken}`)).toEqual({ line: 1, message: 'a record may have at most 1,250 fields' });
    expect(await problem(`a\n${'x'.repeat(10_001)}${broken}`)).toEqual({ line: 2, message: 'a field may be at most 10,000 characters long' });
    expect(await problem(`a\n"${'x'.repeat(10_001)}"${broken}`)).toEqual({ line: 2, message: 'a field may be at most 10,000 characters long' });
    expect(await problem(`a\n${`${'y'.repeat(9_000)},`.repeat(12)}${broken}`)).toEqual({ line: 2, message: 'a record may be at most 100,000 characters long' });
    expect(await problem(`a\n${'\n'.repeat(1_100)}${broken}`)).toEqual({ records: 1_101 });
    // At the limits exactly, the file is read.
    const atLimits = await parseCsvTable(`${'a,'.repeat(1_249)}a\n${'x'.repeat(10_000)}\n"${'y'.repeat(10_000)}"\n${'\n'.repeat(1_097)}`, limits);
    expect(atLimits.header).toHaveLength(1_250);
    expect(atLimits.records.map((record) => record.values[0]!.length)).toEqual([10_000, 10_000]);
  });

  it('refuses U+0000 and lone surrogates in a field by line, quoted or not', async () => {
    expect(await problem('a,b\nx,y\u0000z\n')).toEqual({ line: 2, message: 'contains U+0000 (NUL) or broken Unicode (a lone surrogate), which no text may hold' });
    expect(await problem('a,b\nx,"y\ud800"\n')).toMatchObject({ line: 2 });
    expect(await problem('a,b\nx,\udc00\n')).toMatchObject({ line: 2 });
    // A pair is text: an emoji is read as written.
    expect((await parseCsvTable('a\n"😀,😀"\n', limits)).records[0]!.values).toEqual(['😀,😀']);
  });

  it('reads RFC 4180 as before: quotes, doubled quotes, CRLF, lone CR, a BOM, blank lines, a trailing comma', async () => {
    const table = await parseCsvTable('\ufeffa,b,c\r\n"x, ""y""",,\r\n\r\n"multi\nline",2,3\rlast,row,', limits);
    expect(table.header).toEqual(['a', 'b', 'c']);
    expect(table.records).toEqual([
      { line: 2, values: ['x, "y"', '', ''] },
      { line: 4, values: ['multi\nline', '2', '3'] },
      { line: 6, values: ['last', 'row', ''] },
    ]);
  });

  it('gives the event loop turns while reading a 1.9 MB file (other requests are answered meanwhile)', async () => {
    const lines = ['buyer.name,buyer.email,field.note'];
    for (let index = 0, length = 0; length < 1_900_000; index += 1) {
      lines.push(`"Person ${index}",p${index}@example.com,"${'n'.repeat(1_800)}"`);
      length += lines.at(-1)!.length + 1;
    }
    const text = lines.join('\n');
    expect(text.length).toBeGreaterThan(1_900_000);
    // Counts turns of the event loop taken while the parse is under way.
    let turns = 0;
    let parsing = true;
    const tick = () => {
      if (!parsing) return;
      turns += 1;
      setImmediate(tick);
    };
    setImmediate(tick);
    const table = await parseCsvTable(text, { ...limits, maxRecords: 100_000 });
    parsing = false;
    expect(table.records.length).toBe(lines.length - 1);
    // One turn per 64 Ki characters at least: about 29 for this file.
    expect(turns).toBeGreaterThanOrEqual(20);
  });
});

describe('NUL and lone surrogates in a bulk send are Request.Invalid', () => {
  it('in the name (JSON, multipart, GraphQL), in a CSV cell, and anywhere in a JSON row (kept storable when skipped)', async () => {
    const caller = callerOf(await seedTeam(app));
    const { templateId } = await createReadyTemplate(app, caller.team.apiKey);
    const row = { recipients: [{ identifier: 'buyer', agents: [{ info: { name: 'Ada', email: 'ada@example.com' } }] }] };
    for (const name of ['Bad\u0000name', 'Bad\ud800name', 'Bad\udc00']) {
      const rest = await caller.rest.post(`/templates/${templateId}/bulk-sends`, { name, rows: [row] });
      expect(rest.status).toBe(400);
      expect(rest.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: 'name' }] } });
      const graphql = await caller.graphql(createMutation, { t: templateId, input: { name, rows: [row] } });
      // Refused where the operation's variables are read, at the variable's path.
      expect(graphql.errors?.[0]?.extensions).toMatchObject({ code: 'Request.Invalid', context: { issues: [{ path: 'input.name' }] } });
    }
    const multipart = await postCsv(caller, templateId, 'buyer.name,buyer.email\nAda,ada@example.com\n', { name: 'Bad\u0000name' });
    expect(multipart.status).toBe(400);
    expect(multipart.body.error.context.issues).toEqual([expect.objectContaining({ path: 'name' })]);
    const cell = await postCsv(caller, templateId, 'buyer.name,buyer.email\nAda\u0000,ada@example.com\n');
    expect(cell.body.error).toMatchObject({ name: 'Request.Invalid', context: { issues: [{ path: 'csv (line 2)' }] } });
    const surrogateCell = await caller.graphql(createMutation, { t: templateId, input: { csv: 'buyer.name,buyer.email\n"Ada\ud800",ada@example.com\n' } });
    // A GraphQL csv text is a variable like any other: refused where the variables are read.
    expect(surrogateCell.errors?.[0]?.extensions).toMatchObject({ code: 'Request.Invalid', context: { issues: [{ path: 'input.csv' }] } });

    // In a JSON row: refused by path where the body is read (one check for every REST body,
    // src/domain/validation.ts), skipInvalidRows or not: nothing is recorded.
    const rows = [row, { ...row, nope: 'x', ['k\u0000ey']: 'v\ud800', values: { ['\u0000']: { text: 'y' } } }];
    for (const body of [{ rows }, { rows, skipInvalidRows: true }]) {
      const refused = await caller.rest.post(`/templates/${templateId}/bulk-sends`, body);
      expect(refused.status).toBe(400);
      expect(refused.body.error.name).toBe('Request.Invalid');
      expect(refused.body.error.context.issues.map((issue: any) => issue.path)).toEqual(expect.arrayContaining([expect.stringMatching(/^rows\[1\]/)]));
    }
    expect((await caller.rest.get('/bulk-sends')).body.payload.bulkSends).toHaveLength(0);
    const worker = mainWorkerFor(app, caller.team.teamId, { concurrency: 1 });
    while ((await worker.drain()) > 0);
  }, 60_000);
});

describe('cancel and the job step', () => {
  it('ten cancels racing a step that holds rows: every cancel answers, the step ends cleanly, no row not yet sent is sent', async () => {
    const caller = callerOf(await seedTeam(app));
    const { templateId } = await createReadyTemplate(app, caller.team.apiKey);
    const rows = Array.from({ length: 12 }, (_, index) => ({ recipients: [{ identifier: 'buyer', agents: [{ info: { name: `Race ${index}`, email: `race-${index}@example.com` } }] }] }));
    const { bulkSendId } = (await caller.rest.post(`/templates/${templateId}/bulk-sends`, { rows })).body.payload;

    // A connection of the test's own holds the template: the step's rows, locked in its
    // transaction, wait there for the copy's share lock, so cancels arrive while rows are held.
    const holder = new pg.Client({ connectionString: inject('databaseUrl') });
    await holder.connect();
    const observer = new pg.Client({ connectionString: inject('databaseUrl') });
    await observer.connect();
    try {
      await holder.query('begin');
      await holder.query('select id from template where id = $1 for update', [templateId]);
      const waiting = async (pattern: string) =>
        Number(
          (
            await observer.query(
              `select count(*) as count from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database() and query ilike $1 and pid <> pg_backend_pid()`,
              [pattern],
            )
          ).rows[0].count,
        );
      const until = (condition: () => Promise<boolean>) => eventually(condition, { intervalMs: 10 });

      const stepHandler = mainJobHandlers(workerDependencies(app, { config: { ...app.dependencies.config, bulkSendRowsInFlight: 4 } })).get(OUTBOX_TOPICS.bulkSendStep)!;
      const step = stepHandler({ payload: { teamId: caller.team.teamId, bulkSendId } } as never, { em: app.orm.em.fork(), now: new Date(), logger: createLogger('silent') });
      const stepOutcome = step.then(
        () => 'done',
        (error: unknown) => `failed: ${String(error)}`,
      );
      // The step holds its four rows (made and sent in one transaction) and waits for the template.
      await until(async () => (await waiting('%template%')) >= 1);

      const cancels = Array.from({ length: 10 }, (_, index) =>
        index % 2 === 0
          ? caller.rest
              .post(`/bulk-sends/${bulkSendId}/cancel`)
              .then((answer) => ({ status: answer.status, name: answer.body.error?.name, bulkSendStatus: answer.body.payload?.bulkSend?.status }))
          : caller
              .graphql(`mutation($id: ID!) { cancelBulkSend(id: $id) { status } }`, { id: bulkSendId })
              .then((answer) => ({ status: answer.errors ? 400 : 200, name: answer.errors?.[0]?.extensions?.code, bulkSendStatus: answer.data?.cancelBulkSend?.status })),
      );
      // A cancel waits for a row the step holds.
      await until(async () => (await waiting('%bulk_send%')) >= 1);
      await holder.query('commit');

      const answers = await Promise.all(cancels);
      expect(answers).toEqual(Array.from({ length: 10 }, () => ({ status: 200, name: undefined, bulkSendStatus: 'cancelled' })));
      expect(await stepOutcome).toBe('done');
    } finally {
      await holder.end();
      await observer.end();
    }

    // Only the four rows the step had begun may have been sent (a cancel waits for a row in
    // hand); every row not yet begun is cancelled, and nothing is sent later.
    const worker = mainWorkerFor(app, caller.team.teamId, { concurrency: 1 });
    while ((await worker.drain()) > 0);
    const bulkSend = (await caller.rest.get(`/bulk-sends/${bulkSendId}`)).body.payload.bulkSend;
    expect(bulkSend).toMatchObject({ status: 'cancelled', total: 12 });
    expect(bulkSend.sent).toBeLessThanOrEqual(4);
    const statuses = (await caller.rest.get(`/bulk-sends/${bulkSendId}/rows?limit=100`)).body.payload.rows.map((row: any) => row.status);
    expect(statuses.slice(4)).toEqual(Array.from({ length: 8 }, () => 'cancelled'));
    for (const status of statuses.slice(0, 4)) expect(['sent', 'cancelled']).toContain(status);
    expect(statuses.filter((status: string) => status === 'sent')).toHaveLength(bulkSend.sent);
    const events = (
      await app.orm.em.fork().execute<{ count: string }[]>(`select count(*) as count from audit_event where team_id = ? and type = 'bulk_send.cancelled'`, [caller.team.teamId])
    )[0]!;
    expect(Number(events.count)).toBe(1);
  }, 120_000);
});
