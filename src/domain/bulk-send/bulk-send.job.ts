import type { EntityManager } from '@mikro-orm/postgresql';
import type { BlobStore } from '../../shared/blob-store/index.ts';
import type { Clock } from '../../shared/clock.ts';
import { DomainError, ServerBusyError } from '../../shared/errors.ts';
import type { Logger } from '../../shared/logger.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { type DataMerge, mergeTemplateData, templateDataTags } from '../jumpstart/data-merge.ts';
import { copyTemplate, jumpstartInput, lockTemplateForCopies, writeCopies } from '../jumpstart/jumpstart.service.ts';
import { enqueue } from '../outbox/outbox.ts';
import type { OutboxAcknowledgementStep, OutboxHandler } from '../outbox/outbox-worker.ts';
import { type BulkSendStepPayload, OUTBOX_TOPICS } from '../outbox/topics.ts';
import type { PdfWorkers } from '../pdf/worker-pool.ts';
import type { ServiceContext } from '../service-context.ts';
import { sendDraft, sendNewDraft } from '../signing/send.service.ts';
import type { TeamCaller } from '../team/team-caller.ts';
import { recordCompletion, type StoredRow } from './bulk-send.service.ts';

/*
 * The bulk send's job: one outbox message per step. A step sends the next few rows of one bulk
 * send (BULK_SEND_ROWS_IN_FLIGHT), each row in two guarded transactions:
 *
 * 1. create: the row is locked and claimed (`pending → created`) and its envelope id recorded in
 *    the same transaction that makes the draft by the jumpstart's one code path (copyTemplate);
 * 2. send: in the envelope's transaction (its row lock, taken fairly), `created → sent` and the
 *    send itself (sendDraft), invitations queued in the outbox like any send.
 *
 * Lock order: a row, then its bulk send (the counters), never the other way round; cancelling
 * (cancelBulkSend) takes rows in position order and then the bulk send, so the two never wait
 * on each other in a circle.
 *
 * Together first: the step's rows are first tried in ONE transaction (sendRowsTogether): the
 * template read once under its share lock, every row's draft made (writeCopies, the jumpstart's
 * path, all written by one flush) and each sent (sendNewDraft, the send's path, from the rows just
 * written: nobody else can see the envelope, so no envelope lock) and every row moved
 * `pending → sent` at once, with the counters. That is the whole of a row's two transactions
 * above, committed together. When the domain refuses any row of it, the transaction is rolled back
 * (nothing of any row stays) and the step's rows go the row-by-row way above, which fails the
 * refused row alone.
 *
 * A crash anywhere leaves each row either untouched or in a state the next claim of the step's
 * message (its lease ran out) takes up from: no row is made or sent twice. A refusal of the
 * domain (the template was deleted, a contact removed meanwhile) fails that row with its error;
 * anything else (the database is away) fails the step, which the outbox retries.
 *
 * Fairness: a step handles a few rows and then queues the next one behind what is already due,
 * so another team's mail, seals and sends interleave with a long bulk send; the team's bulk sends
 * run one at a time, oldest first; each row spends one request of the creating key's rate
 * budget, at most BULK_SEND_ROWS_PER_MINUTE.
 */

/**
 * Rows of a step worked on at once: each holds a connection while it runs, and its send takes one
 * of its team's envelope-lock slots (envelope-lock.ts), so the team's own requests keep slots.
 */
const ROW_CONCURRENCY = 4;

/** How long a bulk send waits for its team's older one to finish before it looks again. */
const WAIT_FOR_OLDER_MS = 2_000;

export type BulkSendJobSettings = {
  /** Rows one step takes (BULK_SEND_ROWS_IN_FLIGHT): at most this many of a team's rows are in hand at once, worked ROW_CONCURRENCY at a time. */
  rowsPerStep: number;
  /** The pace (BULK_SEND_ROWS_PER_MINUTE); 0: as fast as the worker goes. */
  rowsPerMinute: number;
  auditKey: Buffer;
  publicUrl: string;
  clock: Clock;
  /** Where a row's data is merged into the template's documents (README "Data merge"), before its envelope is made. */
  blobStore: BlobStore;
  pdfWorkers: PdfWorkers;
  /**
   * Spends one request of the API key's rate budget (main.ts wires the HTTP rate limiter here):
   * answers how long to wait when the budget is spent, or 0 to go on. Absent: nothing is counted.
   */
  spendRateBudget?: (apiKeyId: string) => Promise<number>;
};

type BulkSendRecord = { id: string; team_id: string; workspace_id: string; api_key_id: string; template_id: string; status: string };
type RowRecord = { id: string; position: number; status: 'pending' | 'created'; input: StoredRow; envelope_id: string | null };

function errorOf(error: DomainError): Record<string, unknown> {
  return { name: error.name, description: error.description, context: error.context };
}

function jobContext(settings: BulkSendJobSettings, em: EntityManager, bulkSendId: string): Pick<ServiceContext, 'em' | 'clock' | 'auditKey' | 'publicUrl' | 'metadata'> {
  return { em, clock: settings.clock, auditKey: settings.auditKey, publicUrl: settings.publicUrl, metadata: { requestId: `bulk-send:${bulkSendId}`, ip: null, userAgent: null } };
}

/** One row's step of a bulk send: the job's settings, the row's own entity manager, the request, its caller, the row. */
type RowStep = { settings: BulkSendJobSettings; em: EntityManager; bulkSend: BulkSendRecord; caller: TeamCaller; row: RowRecord };

/** Marks a row failed (guarded on the status it was seen in, `from`) and counts it. */
async function failRow({ em, row, bulkSend }: RowStep, failure: { from: 'pending' | 'created'; error: DomainError; now: Date }): Promise<void> {
  const { from, error, now } = failure;
  await em.transactional(async (tx) => {
    const changed = await tx.execute<{ id: string }[]>(`update bulk_send_row set status = 'failed', error = ?::jsonb, processed_at = ? where id = ? and status = ? returning id`, [
      JSON.stringify(errorOf(error)),
      now,
      row.id,
      from,
    ]);
    if (changed.length === 1) await tx.execute(`update bulk_send set failed_count = failed_count + 1, updated_at = ? where id = ?`, [now, bulkSend.id]);
  });
}

/**
 * The row's data drawn into the template's documents, outside any transaction (PDF work takes
 * seconds); stored copies no envelope names (the row cancelled meanwhile) are orphans, collected.
 * A refusal fails the row (ok: false). `merge: false`: the step read the template's data tags
 * and found none, and the row has no data, so there is nothing to draw (mergeTemplateData's own
 * answer then) and nothing to read again.
 */
async function mergeRow(step: RowStep, options: { merge: boolean }): Promise<{ ok: true; merged: DataMerge | undefined } | { ok: false }> {
  const { settings, em, bulkSend, caller, row } = step;
  if (!options.merge && row.input.data === undefined) return { ok: true, merged: undefined };
  try {
    const merged = await mergeTemplateData(
      { em, blobStore: settings.blobStore, pdfWorkers: settings.pdfWorkers },
      { caller, templateId: bulkSend.template_id },
      {
        data: row.input.data,
        missingData: row.input.missingData ?? 'refuse',
      },
    );
    return { ok: true, merged };
  } catch (error) {
    // Busy workers are a retry of the step, not the row's fault.
    if (!(error instanceof DomainError) || error instanceof ServerBusyError) throw error;
    await failRow(step, { from: 'pending', error, now: settings.clock.now() });
    return { ok: false };
  }
}

/** Step 1 of a row: its draft envelope, made and recorded in one transaction. Answers the envelope id, or null when the row is not to be made (cancelled meanwhile, or failed). */
async function createRow(step: RowStep): Promise<string | null> {
  const { settings, em, bulkSend, caller, row } = step;
  const now = settings.clock.now();
  const merge = await mergeRow(step, { merge: true });
  if (!merge.ok) return null;
  const merged = merge.merged;
  try {
    return await em.transactional(async (tx) => {
      const [current] = await tx.execute<{ status: string }[]>(`select status from bulk_send_row where id = ? for update`, [row.id]);
      if (current?.status !== 'pending') return null;
      const input = jumpstartInput.parse({ name: row.input.name, context: row.input.context, recipients: row.input.recipients });
      const envelopeId = await copyTemplate(jobContext(settings, tx, bulkSend.id), {
        em: tx,
        caller,
        templateId: bulkSend.template_id,
        input,
        extras: { values: row.input.values, auditDetails: { bulkSendId: bulkSend.id, bulkSendRow: row.position }, ...(merged ? { merged } : {}) },
      });
      const claimed = await tx.execute<{ id: string }[]>(`update bulk_send_row set status = 'created', envelope_id = ?, processed_at = ? where id = ? and status = 'pending' returning id`, [
        envelopeId,
        now,
        row.id,
      ]);
      if (claimed.length !== 1) throw new Error('bulk send row changed under its lock');
      await tx.execute(`update bulk_send set created_count = created_count + 1, updated_at = ? where id = ?`, [now, bulkSend.id]);
      return envelopeId;
    });
  } catch (error) {
    if (!(error instanceof DomainError)) throw error;
    await failRow(step, { from: 'pending', error, now });
    return null;
  }
}

/** Step 2 of a row: `created → sent` in the send's own transaction, under the envelope's row lock. */
async function sendRow(step: RowStep, envelopeId: string): Promise<void> {
  const { settings, em, bulkSend, caller, row } = step;
  const context = jobContext(settings, em, bulkSend.id);
  try {
    await inEnvelopeTransaction(context, caller.teamId, envelopeId, async (tx) => {
      const [current] = await tx.execute<{ status: string }[]>(`select status from bulk_send_row where id = ? for update`, [row.id]);
      if (current?.status !== 'created') return;
      await sendDraft(context, tx, caller, envelopeId);
      const now = settings.clock.now();
      await tx.execute(`update bulk_send_row set status = 'sent', processed_at = ? where id = ? and status = 'created'`, [now, row.id]);
      await tx.execute(`update bulk_send set sent_count = sent_count + 1, updated_at = ? where id = ?`, [now, bulkSend.id]);
    });
  } catch (error) {
    if (!(error instanceof DomainError) || error.name === 'Envelope.Busy') throw error;
    await failRow(step, { from: 'created', error, now: settings.clock.now() });
  }
}

/**
 * The step's rows in one transaction (see the top of this file). `merged`: each row's data drawn
 * into the template's documents beforehand (as createRow does). Answers false, with nothing
 * written, when the domain refused a row: the caller then takes the rows one by one.
 */
async function sendRowsTogether(
  settings: BulkSendJobSettings,
  work: { em: EntityManager; bulkSend: BulkSendRecord; caller: TeamCaller; rows: { row: RowRecord; merged: DataMerge | undefined }[] },
): Promise<boolean> {
  const { em, bulkSend, caller, rows } = work;
  const now = settings.clock.now();
  try {
    await em.transactional(async (tx) => {
      // The rows first, in position order (the lock order cancelBulkSend keeps), then the template.
      const current = await tx.execute<{ id: string; status: string }[]>(
        `select id, status from bulk_send_row where id in (${rows.map(() => '?').join(', ')}) order by position for update`,
        [...rows.map(({ row }) => row.id)],
      );
      const stillPending = new Set(current.filter((row) => row.status === 'pending').map((row) => row.id));
      const taken = rows.filter(({ row }) => stillPending.has(row.id));
      if (taken.length === 0) return;
      const source = await lockTemplateForCopies(tx, caller, bulkSend.template_id);
      const context = jobContext(settings, tx, bulkSend.id);
      // Every row's draft written at once (one insert per table for the step), then each sent.
      const copies = await writeCopies(context, {
        em: tx,
        caller,
        source,
        copies: taken.map(({ row, merged }) => ({
          input: jumpstartInput.parse({ name: row.input.name, context: row.input.context, recipients: row.input.recipients }),
          extras: { values: row.input.values, auditDetails: { bulkSendId: bulkSend.id, bulkSendRow: row.position }, ...(merged ? { merged } : {}) },
        })),
      });
      const made: { id: string; envelopeId: string }[] = [];
      for (const [index, written] of copies.entries()) {
        await sendNewDraft(context, tx, caller, written);
        made.push({ id: taken[index]!.row.id, envelopeId: written.envelope.id });
      }
      const moved = await tx.execute<{ id: string }[]>(
        `update bulk_send_row r set status = 'sent', envelope_id = m.envelope_id, processed_at = ?
           from jsonb_to_recordset(?::jsonb) as m(id uuid, envelope_id uuid)
          where r.id = m.id and r.status = 'pending'
          returning r.id`,
        [now, JSON.stringify(made.map((row) => ({ id: row.id, envelope_id: row.envelopeId })))],
      );
      if (moved.length !== made.length) throw new Error('bulk send rows changed under their locks');
      await tx.execute(`update bulk_send set created_count = created_count + ?, sent_count = sent_count + ?, updated_at = ? where id = ?`, [made.length, made.length, now, bulkSend.id]);
    });
    return true;
  } catch (error) {
    if (!(error instanceof DomainError) || error.name === 'Envelope.Busy') throw error;
    return false;
  }
}

/** The step after this one, queued with the acknowledgement of this one (so exactly once). */
function nextStep(payload: BulkSendStepPayload, runAt: Date, now: Date): OutboxAcknowledgementStep {
  return async (em) => {
    await enqueue(em, OUTBOX_TOPICS.bulkSendStep, payload, { now, runAt });
  };
}

/** The handler of `bulk_send.step` (workers.ts). */
export function bulkSendStepHandler(settings: BulkSendJobSettings): OutboxHandler<typeof OUTBOX_TOPICS.bulkSendStep> {
  return async (message, { em, logger }: { em: EntityManager; logger: Logger }) => {
    const payload = message.payload;
    const started = settings.clock.now();
    const [bulkSend] = await em.execute<BulkSendRecord[]>(`select id, team_id, workspace_id, api_key_id, template_id, status from bulk_send where id = ? and team_id = ?`, [
      payload.bulkSendId,
      payload.teamId,
    ]);
    if (!bulkSend || bulkSend.status === 'completed' || bulkSend.status === 'cancelled') return;
    // The team's bulk sends go one at a time, oldest first: a team cannot double its share by
    // starting several.
    const [first] = await em.execute<{ id: string }[]>(`select id from bulk_send where team_id = ? and status in ('queued', 'running') order by created_at, id limit 1`, [bulkSend.team_id]);
    if (first && first.id !== bulkSend.id) return nextStep(payload, new Date(started.getTime() + WAIT_FOR_OLDER_MS), started);
    await em.execute(`update bulk_send set status = 'running', updated_at = ? where id = ? and status = 'queued'`, [started, bulkSend.id]);

    const rows = await em.execute<RowRecord[]>(
      `select id, position, status, input, envelope_id from bulk_send_row where bulk_send_id = ? and status in ('pending', 'created') order by position limit ?`,
      [bulkSend.id, settings.rowsPerStep],
    );
    const caller: TeamCaller = { teamId: bulkSend.team_id, workspaceId: bulkSend.workspace_id, apiKeyId: bulkSend.api_key_id };
    let handled = 0;
    let waitMs = 0;
    const spend = async () => {
      const wait = settings.spendRateBudget ? await settings.spendRateBudget(bulkSend.api_key_id) : 0;
      if (wait > 0) waitMs = wait;
      return wait === 0;
    };
    // Rows one by one, ROW_CONCURRENCY at a time, each on an entity manager of its own (`paid`:
    // their rate budget is spent already).
    const oneByOne = async (list: RowRecord[], paid: boolean) => {
      let next = 0;
      const lane = async () => {
        while (next < list.length && (paid || waitMs === 0)) {
          const row = list[next]!;
          next += 1;
          if (!paid && !(await spend())) return;
          const step: RowStep = { settings, em: em.fork(), bulkSend, caller, row };
          const envelopeId = row.status === 'pending' ? await createRow(step) : row.envelope_id;
          if (envelopeId !== null) await sendRow(step, envelopeId);
          handled += 1;
        }
      };
      await Promise.all(Array.from({ length: Math.min(ROW_CONCURRENCY, list.length) }, lane));
    };
    // A row left `created` (its send not done: a crash, or a refusal of the send) is sent on its own.
    await oneByOne(
      rows.filter((row) => row.status === 'created'),
      false,
    );
    // The waiting rows together: those the rate budget allows now, each merged first.
    const paid: RowRecord[] = [];
    for (const row of rows) {
      if (waitMs > 0) break;
      if (row.status === 'pending' && (await spend())) paid.push(row);
    }
    if (paid.length > 0) {
      // The template's data tags, read once for the step: without any, a row without data has nothing to draw.
      let hasTags = true;
      try {
        hasTags = (await templateDataTags(settings, em.fork(), caller, bulkSend.template_id)).length > 0;
      } catch (error) {
        // The refusal (the template deleted, its tags unreadable) is each row's own, one by one.
        if (!(error instanceof DomainError) || error instanceof ServerBusyError) throw error;
      }
      // Merged ROW_CONCURRENCY at a time (each is PDF work when the template has tags), kept in position order.
      const merges: ({ ok: true; merged: DataMerge | undefined } | { ok: false })[] = [];
      let next = 0;
      const lane = async () => {
        while (next < paid.length) {
          const index = next;
          next += 1;
          merges[index] = await mergeRow({ settings, em: em.fork(), bulkSend, caller, row: paid[index]! }, { merge: hasTags });
        }
      };
      await Promise.all(Array.from({ length: Math.min(ROW_CONCURRENCY, paid.length) }, lane));
      const together: { row: RowRecord; merged: DataMerge | undefined }[] = [];
      paid.forEach((row, index) => {
        const merge = merges[index]!;
        if (merge.ok) together.push({ row, merged: merge.merged });
        else handled += 1;
      });
      if (together.length > 0 && (await sendRowsTogether(settings, { em: em.fork(), bulkSend, caller, rows: together }))) handled += together.length;
      else
        await oneByOne(
          together.map(({ row }) => row),
          true,
        );
    }
    if (waitMs > 0) {
      logger.debug({ bulkSendId: bulkSend.id, waitMs }, 'bulk send waits for its rate budget');
      return nextStep(payload, new Date(settings.clock.now().getTime() + waitMs), settings.clock.now());
    }
    const now = settings.clock.now();
    if (rows.length < settings.rowsPerStep) {
      // Nothing left after these: completed (guarded, once), with its event for webhooks.
      const completed = await em.transactional((tx) => recordCompletion(tx, settings.auditKey, { teamId: bulkSend.team_id, bulkSendId: bulkSend.id, now }));
      if (completed) return;
      // A row is still in hand elsewhere (it cannot be here: the step is one message); look again.
    }
    // The pace: these rows' share of a minute, less the time they took.
    const paced = settings.rowsPerMinute > 0 ? Math.max(0, Math.ceil((handled * 60_000) / settings.rowsPerMinute) - (now.getTime() - started.getTime())) : 0;
    return nextStep(payload, new Date(now.getTime() + paced), now);
  };
}
