/**
 * Signed artefacts (docs/artefacts.md): the finalized envelope's documents with every value
 * drawn in and the service's PAdES seal, stored content-addressed; draft copies before that.
 *
 * Sealing is the `artefact.seal` outbox job (one per finalized envelope) and is idempotent: a
 * document whose `sealed_sha256` is set is never sealed again, and the hash is recorded by a
 * guarded update (`... where sealed_sha256 is null`), so a job that crashed after storing a file
 * and is run again (or a download that seals a document the job has not reached yet) records one
 * sealed file per document, whoever finishes first. A file stored by a run whose update lost
 * stays in the blob store unreferenced until the orphan sweep removes it (document/orphan-blobs.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { BlobStore, LocalBlob } from '../../shared/blob-store/index.ts';
import type { Clock } from '../../shared/clock.ts';
import { ReasonedError } from '../../shared/failure-reason.ts';
import { appendAuditEvent } from '../audit/audit.service.ts';
import { displayText } from '../field/field-display.ts';
import { resolveFields, type VisibleWhen } from '../field/field-rules.js';
import { DELIVERY_FAILURES } from '../outbox/delivery-failures.ts';
import { PermanentOutboxError } from '../outbox/outbox-worker.ts';
import type { RenderAppendix } from '../pdf/appendix.ts';
import type { RenderField } from '../pdf/render.ts';
import { sealReason } from '../pdf/seal-reason.ts';
import type { PdfWorkers } from '../pdf/worker-pool.ts';
import { agentPersonSqlText } from '../recipient/agent-people.ts';
import { type SealCertificate, sealMaterialOf } from './seal-certificate.ts';
import { SEAL_SIGNER_UNAVAILABLE } from './seal-signer.ts';
import { stampOf } from './stamps.ts';

export type ArtefactDependencies = {
  em: EntityManager;
  blobStore: BlobStore;
  pdfWorkers: PdfWorkers;
  seal: SealCertificate;
  auditKey: Buffer;
  clock: Clock;
  publicUrl: string;
  /**
   * When the job doing this work started (`Date.now()`): its PDF tasks take their place in the
   * team's PDF queue as of then (worker-pool.ts `queuedSince`). Absent: each task as of its own turn.
   */
  pdfQueuedSince?: number;
};

/** `working_sha256`: the file as the last signer with a trust service signed it (issue 35); null when nobody did. */
type DocumentRow = { id: string; name: string; content_sha256: string; working_sha256: string | null; sealed_sha256: string | null };

/**
 * Every field with a view on the document, with its value and views: what the renderer draws. A
 * field hidden by its conditions (issue 32) is not drawn; whether it is hidden is decided over the
 * whole envelope's fields with the rules the service and the signing page apply (field-rules.js).
 */
export async function renderFieldsOf(em: EntityManager, documentId: string): Promise<RenderField[]> {
  type Row = {
    id: string;
    identifier: string;
    envelope_id: string;
    visible_when: unknown;
    locale: string | null;
    type: RenderField['type'];
    recipient_id: string | null;
    value: RenderField['value'];
    config: RenderField['config'];
    views: RenderField['views'];
  };
  const reader = em.fork();
  // The locale of the recipient's first person writes month names and decimal marks (docs/fields.md).
  const rows = await reader.execute<Row[]>(
    `select f.id, f.identifier, f.envelope_id, f.visible_when, f.type, f.recipient_id, f.value, f.config,
            (select ${agentPersonSqlText('a', 0)} ->> 'locale' from agent a where a.recipient_id = f.recipient_id order by a.position, a.id limit 1) as locale,
            json_agg(json_build_object('page', v.page, 'x', v.x, 'y', v.y, 'width', v.width, 'height', v.height) order by v.position) as views
       from field f join field_view v on v.field_id = f.id
      where v.document_id = ?
      group by f.id, f.type, f.recipient_id, f.value, f.config
      order by min(f.created_at), f.id`,
    [documentId],
  );
  let shown = rows;
  // Conditions may name fields on other documents: only then is the whole envelope read.
  const conditional = rows.find((row) => row.visible_when !== null);
  if (conditional !== undefined) {
    const all = await reader.execute<{ identifier: string; type: string; config: Record<string, unknown>; value: Record<string, unknown> | null; visible_when: VisibleWhen | null }[]>(
      'select identifier, type, config, value, visible_when from field where envelope_id = ?',
      [conditional.envelope_id],
    );
    const resolved = resolveFields(all.map((field) => ({ identifier: field.identifier, type: field.type, config: field.config ?? {}, value: field.value, visibleWhen: field.visible_when })));
    shown = rows.filter((row) => resolved.get(row.identifier)?.visible !== false);
  }
  return shown.map((row) => {
    const config = row.config ?? {};
    const text = row.value === null ? undefined : displayText(row.type, row.value, config, row.locale ?? 'en-US');
    return { id: row.id, type: row.type, recipientId: row.recipient_id, value: row.value, config, views: row.views, ...(text === undefined ? {} : { text }) };
  });
}

/** The fields whose values a document's working file carries: those drawn into the files its trust-service signers signed (signer-signature.service.ts). */
export async function fieldsInWorkingFile(em: EntityManager, documentId: string): Promise<Set<string>> {
  const rows = await em.fork().execute<{ field_id: string }[]>(
    `select distinct jsonb_array_elements_text(entry -> 'fieldIds') as field_id
         from signer_signature s cross join lateral jsonb_array_elements(s.prepared) entry
        where s.status = 'signed' and entry ->> 'documentId' = ?`,
    [documentId],
  );
  return new Set(rows.map((row) => row.field_id));
}

/** The certificates (DER, each chain's) of the trust-service signatures a document's working file carries. */
async function signerCertificatesOf(em: EntityManager, documentId: string): Promise<Uint8Array[]> {
  const rows = await em.fork().execute<{ certificate: string }[]>(
    `select distinct c.certificate
       from signer_signature s cross join lateral jsonb_array_elements_text(s.certificates) c(certificate)
      where s.status = 'signed' and exists (select 1 from jsonb_array_elements(s.prepared) entry where entry ->> 'documentId' = ?)`,
    [documentId],
  );
  return rows.map((row) => new Uint8Array(Buffer.from(row.certificate, 'base64')));
}

/** A kept attachment to append after a document, as the store holds it. */
type AppendixRow = { name: string; content_type: RenderAppendix['contentType']; sha256: string };

/**
 * The attachments kept by the attachment fields whose first view is on this document, in the
 * fields' order and each value's own order: appended as pages after the document (docs/artefacts.md).
 * A hidden field's value was dropped at submit, and an upload not kept is named by no value.
 */
export async function appendicesOf(em: EntityManager, documentId: string): Promise<AppendixRow[]> {
  return em.fork().execute<AppendixRow[]>(
    `select fa.name, fa.content_type, fa.sha256
       from field f
       cross join lateral jsonb_array_elements(f.value -> 'files') with ordinality as kept(file, position)
       join field_attachment fa on fa.id::text = kept.file ->> 'id' and fa.field_id = f.id
      where f.type = 'attachment' and jsonb_typeof(f.value -> 'files') = 'array'
        and (select v.document_id from field_view v where v.field_id = f.id order by v.position, v.id limit 1) = ?
      order by f.created_at, f.id, kept.position`,
    [documentId],
  );
}

async function withTemporaryFile<T>(work: (filePath: string) => Promise<T>): Promise<T> {
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'artefact-'));
  try {
    return await work(path.join(directory, 'out.pdf'));
  } finally {
    await fs.promises.rm(directory, { recursive: true, force: true });
  }
}

/** Draws the values into the original at `sourcePath` and seals it, into `outputPath` (a PDF worker). */
async function renderSealed(
  dependencies: ArtefactDependencies,
  envelope: { id: string; teamId: string; completedAt: Date },
  document: DocumentRow,
  job: { sourcePath: string; outputPath: string; fields: RenderField[]; appendices: RenderAppendix[]; signerCertificates: Uint8Array[] },
): Promise<void> {
  const { signerCertificates, ...render } = job;
  const stamp = await stampOf(dependencies.em, envelope.id);
  try {
    await dependencies.pdfWorkers.render(
      {
        ...render,
        draft: false,
        stamp,
        seal: {
          material: sealMaterialOf(dependencies.seal),
          info: {
            reason: sealReason(envelope.id, document.id),
            name: 'Envelope service',
            location: dependencies.publicUrl,
            contactInfo: '',
            signingTime: envelope.completedAt,
            tsaUrl: dependencies.seal.tsaUrl,
            // The signers' certificates (trust-service signatures in the file) get their
            // revocation data in the DSS too, so their signatures reach B-LTA with the seal's.
            ...(signerCertificates.length > 0 ? { signerCertificates } : {}),
          },
        },
      },
      // The envelope's team waits for it in the fair queue, as its own uploads do.
      { team: envelope.teamId, signDigest: dependencies.seal.signer.signDigest, queuedSince: dependencies.pdfQueuedSince },
    );
  } catch (error) {
    // The TSA or a revocation source failed (pdf/timestamp.ts, pdf/ltv.ts): retried under its own reason.
    const code = (error as { code?: string }).code;
    if (code === 'TIMESTAMP_UNAVAILABLE') throw new ReasonedError(DELIVERY_FAILURES.timestampUnavailable, (error as Error).message);
    if (code === 'REVOCATION_UNAVAILABLE') throw new ReasonedError(DELIVERY_FAILURES.revocationUnavailable, (error as Error).message);
    if (code === SEAL_SIGNER_UNAVAILABLE) throw new ReasonedError(DELIVERY_FAILURES.sealSignerUnavailable, (error as Error).message);
    throw error;
  }
}

/** A document's sealed file: rendered, sealed and stored, not yet recorded (`recordSealed`). */
async function sealedFileOf(
  dependencies: ArtefactDependencies,
  envelope: { id: string; teamId: string; completedAt: Date },
  document: DocumentRow,
): Promise<{ sha256: string; byteSize: number }> {
  // A document signers signed at their trust services is sealed over their signatures: the
  // values their files carry are not drawn again, the rest (later simple signers') are, and the
  // seal is an incremental update, so every signer's signature keeps covering its bytes.
  const inWorkingFile = document.working_sha256 === null ? new Set<string>() : await fieldsInWorkingFile(dependencies.em, document.id);
  const fields = (await renderFieldsOf(dependencies.em, document.id)).filter((field) => field.id === undefined || !inWorkingFile.has(field.id));
  // The original (or the working file) from the store's bounded local cache (the file itself for
  // the file store), held while the worker reads it; a missing or unreachable one fails the job
  // by name and the outbox retries it.
  const source = await dependencies.blobStore.localCopy(document.working_sha256 ?? document.content_sha256);
  // The attachments' files are held like the original while the worker reads them.
  const held: LocalBlob[] = [];
  return withTemporaryFile(async (outputPath) => {
    try {
      const appendices: RenderAppendix[] = [];
      // Appended pages change the page tree, which would break the signers' signatures: a signed
      // working file keeps its pages, and its attachments are in the evidence package only.
      const appended = document.working_sha256 === null ? await appendicesOf(dependencies.em, document.id) : [];
      for (const row of appended) {
        const copy = await dependencies.blobStore.localCopy(row.sha256);
        held.push(copy);
        appendices.push({ path: copy.path, contentType: row.content_type, name: row.name, sha256: row.sha256 });
      }
      const signerCertificates = document.working_sha256 === null ? [] : await signerCertificatesOf(dependencies.em, document.id);
      await renderSealed(dependencies, envelope, document, { sourcePath: source.path, outputPath, fields, appendices, signerCertificates });
    } finally {
      source.release();
      for (const copy of held) copy.release();
    }
    // Object first, row after (below): a row never names an object that is not stored.
    const staged = await dependencies.blobStore.stage(fs.createReadStream(outputPath));
    return staged.commit();
  });
}

/** Records a document's sealed file (once: a concurrent run's record stands) with its audit event. */
async function recordSealed(
  dependencies: ArtefactDependencies,
  envelope: { id: string; teamId: string },
  document: DocumentRow,
  stored: { sha256: string; byteSize: number },
): Promise<string> {
  return dependencies.em.fork().transactional(async (em) => {
    const updated = await em.execute<{ id: string }[]>(`update document set sealed_sha256 = ? where id = ? and sealed_sha256 is null returning id`, [stored.sha256, document.id]);
    if (updated.length === 0) {
      const [row] = await em.execute<{ sealed_sha256: string }[]>(`select sealed_sha256 from document where id = ?`, [document.id]);
      return row!.sealed_sha256;
    }
    await appendAuditEvent(em, dependencies.auditKey, {
      teamId: envelope.teamId,
      envelopeId: envelope.id,
      type: 'artefact.sealed',
      actor: { type: 'system', id: null },
      request: null,
      details: {
        documentId: document.id,
        originalSha256: document.content_sha256,
        ...(document.working_sha256 === null ? {} : { signedBySignersSha256: document.working_sha256 }),
        sealedSha256: stored.sha256,
        byteSize: stored.byteSize,
      },
      at: dependencies.clock.now(),
    });
    return stored.sha256;
  });
}

/**
 * Seals every document of a finalized envelope that is not sealed yet; answers how many this call
 * recorded. Safe to run any number of times, concurrently too.
 */
export async function sealEnvelopeArtefacts(dependencies: ArtefactDependencies, envelopeId: string): Promise<number> {
  const em = dependencies.em.fork();
  const [envelope] = await em.execute<{ id: string; team_id: string; status: string; completed_at: Date | string | null }[]>(
    `select id, team_id, status, completed_at from envelope where id = ?`,
    [envelopeId],
  );
  if (envelope === undefined) throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeMissing, `envelope ${envelopeId} does not exist`);
  if (envelope.status !== 'finalized') throw new PermanentOutboxError(DELIVERY_FAILURES.envelopeNotFinalized(envelope.status), `envelope ${envelopeId} is ${envelope.status}, not finalized`);
  const documents = await em.execute<DocumentRow[]>(`select id, name, content_sha256, working_sha256, sealed_sha256 from document where envelope_id = ? order by "order", id`, [envelopeId]);
  const completedAt = envelope.completed_at === null ? dependencies.clock.now() : new Date(envelope.completed_at);
  const closing = { id: envelope.id, teamId: envelope.team_id, completedAt };
  const unsealed = documents.filter((document) => document.sealed_sha256 === null);
  // Two documents in flight: while the PDF thread renders one, this thread reads the next one's
  // fields and stores the last one's file, so the thread does the job's documents back to back
  // instead of waiting on each one's database and storage work (docs/performance.md, P9). Not all
  // of them at once: a job of many documents must not fill the PDF queue other teams' uploads use.
  const files: Promise<{ sha256: string; byteSize: number }>[] = [];
  const render = (index: number) => {
    const file = sealedFileOf(dependencies, closing, unsealed[index]!);
    // Its outcome is read in order below; a failure while an earlier one is awaited is not left unhandled meanwhile.
    file.catch(() => undefined);
    files.push(file);
  };
  for (let index = 0; index < Math.min(SEAL_DOCUMENTS_IN_FLIGHT, unsealed.length); index += 1) render(index);
  // Each is recorded as soon as it and those before it are, in the envelope's document order, as
  // when they were sealed one by one; one that failed is left for the retry (which seals only what
  // is not recorded), and so is every one after it, recorded by the retry in order.
  let sealed = 0;
  try {
    for (const [index, document] of unsealed.entries()) {
      const file = await files[index]!;
      if (files.length < unsealed.length) render(files.length);
      await recordSealed(dependencies, closing, document, file);
      sealed += 1;
    }
  } catch (error) {
    // No later one starts; the one still in flight ends before the job does (the retry starts clean).
    await Promise.allSettled(files);
    throw error;
  }
  return sealed;
}

/** Documents of one envelope rendered and sealed at once by a seal job (see sealEnvelopeArtefacts). */
const SEAL_DOCUMENTS_IN_FLIGHT = 2;

/** Renders the current state of a document, unsealed, each page marked as a draft copy, into `outputPath`. */
export async function renderDraftCopy(
  dependencies: Pick<ArtefactDependencies, 'em' | 'blobStore' | 'pdfWorkers'>,
  document: { id: string; contentSha256: string; teamId: string },
  outputPath: string,
): Promise<void> {
  const fields = await renderFieldsOf(dependencies.em, document.id);
  const source = await dependencies.blobStore.localCopy(document.contentSha256);
  try {
    await dependencies.pdfWorkers.render({ sourcePath: source.path, outputPath, fields, draft: true }, { team: document.teamId });
  } finally {
    source.release();
  }
}
