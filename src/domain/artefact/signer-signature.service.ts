/**
 * A signer's advanced or qualified signature at its trust service (issue 35): the callback's half.
 * The provider sends the browser back to `PUBLIC_URL/sign/trust-service/callback` twice; the
 * state's row (signer_signature, by the hash of the state) says which step it ends:
 *
 * 1. `service_authorizing` → `preparing` → `credential_authorizing`: the code is exchanged for a
 *    service-scope token, the signer's credential and certificate are read, and every document is
 *    prepared (the values not yet in it drawn, the signer's placeholder added, as an incremental
 *    update of a file an earlier signer signed) in a PDF worker. The hashes of the signed
 *    attributes go out in a second authorization, `scope=credential`, for exactly these hashes.
 * 2. `credential_authorizing` → `signing` → `signed`: the code is exchanged for a credential-scope
 *    token, signatures/signHash signs the hashes, each signature is embedded in its prepared file
 *    (with a signature timestamp when TSA_URL is set), and, under the envelope's lock, the files
 *    become the documents' working files and the role completes (signing/trust-signing.ts
 *    `completeSigner`), exactly as a simple signer's Finish completes it.
 *
 * Every move is a guarded update from the status the step expects for the state it holds: a
 * replayed or doubled callback finds nothing to move and changes nothing, a Finish again (a new
 * state) retires an older attempt whatever step it was at, and the working file is replaced only
 * if it is still the one the signer's file was prepared from (two signers in parallel: the second
 * to finish is told to sign again, over the first one's signature). Whatever the provider refuses
 * or fails to answer ends the attempt as `failed` with `Signing.TrustServiceFailed`, the values
 * saved, and the browser back on the signing page, which says so and offers Finish again.
 */
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decryptSecret } from '../../shared/encrypted-secret.ts';
import { hashSecret } from '../../shared/ids.ts';
import { inEnvelopeTransaction } from '../envelope/envelope-lock.ts';
import { Field } from '../field/field.entity.ts';
import { describeCertificate } from '../pdf/certificate-description.ts';
import { signedAttributesOf } from '../pdf/seal.ts';
import { agentPersonSqlText } from '../recipient/agent-people.ts';
import { Recipient } from '../recipient/recipient.entity.ts';
import type { ServiceContext } from '../service-context.ts';
import { SigningTrustServiceFailedError } from '../signing/signing.errors.ts';
import { completeSigner, endAttempt, failTrustSignature, newTrustState, pkceOf, TRUST_RETURN_TOKEN_LABEL, trustServiceFailure, trustServiceRedirectUri } from '../signing/trust-signing.ts';
import { lockEnvelope, type Workflow } from '../signing/workflow.ts';
import { createCscClient, RSA_ENCRYPTION_OID, SHA256_OID, TrustServiceError } from '../trust/csc-client.ts';
import { providerOf, teamTrustServices } from '../trust/trust-services.ts';
import { fieldsInWorkingFile, renderFieldsOf } from './artefact.service.ts';

export type TrustServiceCallbackQuery = { state: string | null; code: string | null; error: string | null; errorDescription: string | null };

/**
 * Where the browser goes next: `provider` (the second authorization), `signing_page` (the signing
 * link, whose page shows what happened), or `outcome` for a session that has no page to return to
 * (an embedded session's credential is not a URL) or a state nobody issued.
 */
export type TrustServiceCallbackAnswer =
  | { kind: 'provider'; location: string }
  | { kind: 'signing_page'; token: string }
  | { kind: 'outcome'; outcome: 'signed' | 'failed' | 'pending' | 'unknown' };

/** One prepared document (signer_signature.prepared): where it came from, the file to sign, and what it draws. */
type PreparedDocument = {
  documentId: string;
  /** The working file it was prepared from; null: from the original. */
  workingBefore: string | null;
  preparedSha256: string;
  /** The fields whose values this signer's file draws (with the working file's, all that are in it). */
  fieldIds: string[];
  /** The signed attributes' SHA-256 (hex): what the provider signs. */
  hash: string;
};

type SignerSignatureRow = {
  id: string;
  envelope_id: string;
  team_id: string;
  recipient_id: string;
  agent_id: string;
  person_index: number;
  level: string;
  trust_service_id: string;
  status: string;
  return_token: string | null;
  credential_id: string | null;
  certificates: string[] | null;
  prepared: (PreparedDocument & { revision: number })[] | null;
  consent: string | null;
  revision: number;
  signer_name: string | null;
  /** The attempt was made in an embedded session (a signing URL's): its credential is never put in a URL. */
  embedded: boolean;
};

export async function handleTrustServiceCallback(context: ServiceContext, query: TrustServiceCallbackQuery): Promise<TrustServiceCallbackAnswer> {
  if (!query.state) return { kind: 'outcome', outcome: 'unknown' };
  const stateHash = hashSecret(query.state);
  const [row] = await context.em.fork().execute<SignerSignatureRow[]>(
    `select s.id, s.envelope_id, e.team_id, s.recipient_id, s.agent_id, s.person_index, s.level, s.trust_service_id, s.status, s.return_token,
            s.credential_id, s.certificates, s.prepared, s.consent, e.revision,
            (select ${agentPersonSqlText('a', 's.person_index')} ->> 'name' from agent a where a.id = s.agent_id) as signer_name,
            coalesce((select t.embedding is not null from signing_token t where t.id = s.token_id), false) as embedded
       from signer_signature s join envelope e on e.id = s.envelope_id where s.state_hash = ?`,
    [stateHash],
  );
  if (row === undefined) return { kind: 'outcome', outcome: 'unknown' };
  const back = (outcome: 'signed' | 'failed' | 'pending'): TrustServiceCallbackAnswer => returnTo(context, row, outcome);
  const attempt = { teamId: row.team_id, envelopeId: row.envelope_id, recipientId: row.recipient_id, agentId: row.agent_id, trustServiceId: row.trust_service_id };
  const fail = async (error: SigningTrustServiceFailedError): Promise<TrustServiceCallbackAnswer> => {
    await endAttempt(context, { stateHash, attempt, error });
    return back('failed');
  };
  if (query.error !== null) {
    // The signer declined, or the provider refused at its own page (a wrong PIN, a disabled credential).
    const reason = query.error === 'access_denied' ? 'declined' : 'refused';
    const said = query.errorDescription ?? query.error;
    if (row.status !== 'service_authorizing' && row.status !== 'credential_authorizing') return back(row.status === 'signed' ? 'signed' : 'pending');
    return fail(new SigningTrustServiceFailedError({ reason, detail: `the provider said "${said.slice(0, 300)}"`, trustServiceId: row.trust_service_id, providerSaid: said.slice(0, 300) }));
  }
  if (!query.code) return back(row.status === 'signed' ? 'signed' : 'pending');
  const step = row.status === 'service_authorizing' ? 'preparing' : row.status === 'credential_authorizing' ? 'signing' : null;
  // A replay, a second tab, or a callback an earlier Finish left behind: nothing to move.
  if (step === null || !(await claim(context, { stateHash, from: row.status, to: step }))) return back(row.status === 'signed' ? 'signed' : row.status === 'failed' ? 'failed' : 'pending');
  try {
    if (step === 'preparing') return { kind: 'provider', location: await prepare(context, row, { stateHash, code: query.code, state: query.state }) };
    await sign(context, row, { stateHash, code: query.code, state: query.state });
    return back('signed');
  } catch (error) {
    if (error instanceof SigningTrustServiceFailedError || error instanceof TrustServiceError) return fail(trustServiceFailure(error, row.trust_service_id));
    // Ours, not the provider's (a PDF worker, the store): the attempt ends so that Finish again
    // starts over, and the failure goes on as what it is.
    await failTrustSignature(context.em.fork(), {
      stateHash,
      error: { name: 'Signing.TrustServiceFailed', reason: 'internal', message: 'The service could not finish your signature; finish again to retry.', providerSaid: null },
      now: context.clock.now(),
    });
    throw error;
  }
}

/** The guarded move that makes this callback the one that carries the step on. */
async function claim(context: ServiceContext, options: { stateHash: string; from: string; to: string }): Promise<boolean> {
  const moved = await context.em
    .fork()
    .execute<{ id: string }[]>(`update signer_signature set status = ?, updated_at = ? where state_hash = ? and status = ? returning id`, [
      options.to,
      context.clock.now(),
      options.stateHash,
      options.from,
    ]);
  return moved.length === 1;
}

function returnTo(context: ServiceContext, row: SignerSignatureRow, outcome: 'signed' | 'failed' | 'pending'): TrustServiceCallbackAnswer {
  // An invitation link is the page's own URL; an embedded session's credential (a signing URL's,
  // kept out of URLs by design) is not: that browser gets a page saying the outcome instead.
  if (row.embedded || row.return_token === null) return { kind: 'outcome', outcome };
  return { kind: 'signing_page', token: decryptSecret(context.auditKey, TRUST_RETURN_TOKEN_LABEL, row.return_token) };
}

async function clientFor(context: ServiceContext, row: SignerSignatureRow) {
  const service = (await teamTrustServices(context.em.fork(), row.team_id)).find((candidate) => candidate.id === row.trust_service_id);
  if (service === undefined || service.clientSecret === null) {
    throw new SigningTrustServiceFailedError({
      reason: 'not_configured',
      detail: `the team no longer has the trust service "${row.trust_service_id}"`,
      trustServiceId: row.trust_service_id,
    });
  }
  return createCscClient(providerOf(context.auditKey, service));
}

async function withTemporaryDirectory<T>(work: (directory: string) => Promise<T>): Promise<T> {
  const directory = await fs.promises.mkdtemp(path.join(os.tmpdir(), 'signer-signature-'));
  try {
    return await work(directory);
  } finally {
    await fs.promises.rm(directory, { recursive: true, force: true });
  }
}

/** Step 1: the credential and certificate read, the documents prepared, the hashes sent out for authorization. */
async function prepare(context: ServiceContext, row: SignerSignatureRow, callback: { stateHash: string; code: string; state: string }): Promise<string> {
  const client = await clientFor(context, row);
  const redirectUri = trustServiceRedirectUri(context.publicUrl);
  const token = await client.exchangeCode({ code: callback.code, redirectUri, codeVerifier: pkceOf(context.auditKey, callback.state).verifier });
  const [credentialId] = await client.listCredentials(token.accessToken);
  if (credentialId === undefined)
    throw new SigningTrustServiceFailedError({ reason: 'refused', detail: 'the provider lists no signing credential for you', trustServiceId: row.trust_service_id });
  const credential = await client.credentialInfo(token.accessToken, credentialId);
  if (credential.certificateStatus !== undefined && credential.certificateStatus !== 'valid') {
    throw new SigningTrustServiceFailedError({
      reason: 'certificate_revoked',
      detail: `the provider says your certificate is ${credential.certificateStatus}; a signature by it would not validate`,
      trustServiceId: row.trust_service_id,
    });
  }
  if (credential.keyStatus !== 'enabled') {
    throw new SigningTrustServiceFailedError({ reason: 'refused', detail: `the provider says your signing key is ${credential.keyStatus}`, trustServiceId: row.trust_service_id });
  }
  const signerCertificate = credential.certificates[0]!;
  const described = describeCertificate(signerCertificate);
  // A qualified signature needs a qualified certificate on a QSCD (eIDAS Art. 3(12)): a lesser one
  // is refused rather than signed with less than the sender asked for.
  if (row.level === 'qualified' && described.level !== 'qualified') {
    throw new SigningTrustServiceFailedError({
      reason: 'refused',
      detail: 'your certificate is not a qualified certificate for signatures on a QSCD (its QC statements say so); a qualified signature needs one',
      trustServiceId: row.trust_service_id,
    });
  }
  const now = context.clock.now();
  const notAfter = new Date(new X509Certificate(signerCertificate).validTo);
  if (notAfter <= now) throw new SigningTrustServiceFailedError({ reason: 'refused', detail: 'your certificate has expired', trustServiceId: row.trust_service_id });
  const documents = await context.em
    .fork()
    .execute<{ id: string; content_sha256: string; working_sha256: string | null }[]>(`select id, content_sha256, working_sha256 from document where envelope_id = ? order by "order", id`, [
      row.envelope_id,
    ]);
  const name = row.signer_name ?? 'Signer';
  // Only final values go into a signed file: this signer's, those of roles that completed, and
  // the sender's own fields. A role still signing (in parallel, or later) may change its values;
  // they are drawn by its own signature or by the seal, over this one.
  const final = new Set(
    (await context.em.fork().execute<{ id: string }[]>(`select id from recipient where envelope_id = ? and (completed_at is not null or id = ?)`, [row.envelope_id, row.recipient_id])).map(
      (recipient) => recipient.id,
    ),
  );
  const prepared: (PreparedDocument & { revision: number })[] = [];
  for (const document of documents) {
    const already = document.working_sha256 === null ? new Set<string>() : await fieldsInWorkingFile(context.em, document.id);
    const fields = (await renderFieldsOf(context.em, document.id)).filter(
      (field) => field.value !== null && field.id !== undefined && !already.has(field.id) && (field.recipientId == null || final.has(field.recipientId)),
    );
    const source = await context.blobStore.localCopy(document.working_sha256 ?? document.content_sha256);
    const entry = await withTemporaryDirectory(async (directory) => {
      const outputPath = path.join(directory, 'prepared.pdf');
      let contentDigest: Uint8Array;
      try {
        ({ contentDigest } = await context.pdfWorkers.prepareSignature(
          { sourcePath: source.path, outputPath, fields, signature: { certificates: credential.certificates, info: { reason: `Signed by ${name}`, name, signingTime: now } } },
          { team: row.team_id },
        ));
      } finally {
        source.release();
      }
      const stored = await (await context.blobStore.stage(fs.createReadStream(outputPath))).commit();
      const hash = signedAttributesOf(contentDigest, signerCertificate).digest.toString('hex');
      return {
        documentId: document.id,
        workingBefore: document.working_sha256,
        preparedSha256: stored.sha256,
        fieldIds: [...already, ...fields.map((field) => field.id!)],
        hash,
        revision: row.revision,
      };
    });
    prepared.push(entry);
  }
  const next = newTrustState();
  const moved = await context.em.fork().execute<{ id: string }[]>(
    `update signer_signature set status = 'credential_authorizing', state_hash = ?, credential_id = ?, certificates = ?, certificate = ?, prepared = ?, updated_at = ?
      where state_hash = ? and status = 'preparing' returning id`,
    [
      next.stateHash,
      credentialId,
      JSON.stringify(credential.certificates.map((der) => Buffer.from(der).toString('base64'))),
      JSON.stringify(described),
      JSON.stringify(prepared),
      context.clock.now(),
      callback.stateHash,
    ],
  );
  if (moved.length === 0)
    throw new SigningTrustServiceFailedError({ reason: 'values_changed', detail: 'your values changed while your documents were prepared', trustServiceId: row.trust_service_id });
  return client.authorizeUrl({
    redirectUri,
    state: next.state,
    scope: 'credential',
    credentialId,
    hashes: prepared.map((entry) => Buffer.from(entry.hash, 'hex')),
    numSignatures: prepared.length,
    hashAlgorithmOID: SHA256_OID,
    codeChallenge: pkceOf(context.auditKey, next.state).challenge,
    description: `Sign ${prepared.length} document${prepared.length === 1 ? '' : 's'}`,
  });
}

/** Step 2: the hashes signed, the signatures embedded, the working files replaced and the role completed, once. */
async function sign(context: ServiceContext, row: SignerSignatureRow, callback: { stateHash: string; code: string; state: string }): Promise<void> {
  const client = await clientFor(context, row);
  const token = await client.exchangeCode({ code: callback.code, redirectUri: trustServiceRedirectUri(context.publicUrl), codeVerifier: pkceOf(context.auditKey, callback.state).verifier });
  const prepared = row.prepared ?? [];
  const certificates = (row.certificates ?? []).map((der) => new Uint8Array(Buffer.from(der, 'base64')));
  const signatures = await client.signHash(token.accessToken, {
    credentialId: row.credential_id!,
    hashes: prepared.map((entry) => Buffer.from(entry.hash, 'hex')),
    hashAlgorithmOID: SHA256_OID,
    signAlgo: RSA_ENCRYPTION_OID,
  });
  if (signatures.length !== prepared.length)
    throw new SigningTrustServiceFailedError({ reason: 'invalid_response', detail: 'the provider answered another number of signatures than hashes' });
  const signed: { documentId: string; workingBefore: string | null; sha256: string }[] = [];
  for (const [index, entry] of prepared.entries()) {
    const source = await context.blobStore.localCopy(entry.preparedSha256);
    const stored = await withTemporaryDirectory(async (directory) => {
      const outputPath = path.join(directory, 'signed.pdf');
      try {
        await context.pdfWorkers.embedSignature(
          { sourcePath: source.path, outputPath, certificates, signature: signatures[index]!, ...(context.seal.tsaUrl ? { tsaUrl: context.seal.tsaUrl } : {}) },
          { team: row.team_id },
        );
      } finally {
        source.release();
      }
      return (await context.blobStore.stage(fs.createReadStream(outputPath))).commit();
    });
    signed.push({ documentId: entry.documentId, workingBefore: entry.workingBefore, sha256: stored.sha256 });
  }
  const certificate = new X509Certificate(certificates[0]!);
  await inEnvelopeTransaction(context, row.team_id, row.envelope_id, async (em) => {
    const envelope = await lockEnvelope(em, row.envelope_id);
    const recipient = await em.findOne(Recipient, { id: row.recipient_id }, { refresh: true });
    const changed = (detail: string) => new SigningTrustServiceFailedError({ reason: 'envelope_changed', detail, trustServiceId: row.trust_service_id });
    if (envelope === null || recipient === null || envelope.status !== 'sent') throw changed('the envelope is no longer out for signature');
    if (recipient.completedAt !== null || recipient.activatedAt === null) throw changed('your role is no longer waiting for your signature');
    if (prepared.some((entry) => entry.revision !== envelope.revision)) throw changed('the sender corrected the envelope while you signed; sign what it says now');
    const done = await em.execute<{ id: string }[]>(`update signer_signature set status = 'signed', signed_at = ?, updated_at = ? where state_hash = ? and status = 'signing' returning id`, [
      context.clock.now(),
      context.clock.now(),
      callback.stateHash,
    ]);
    if (done.length === 0) throw changed('this attempt was replaced by a newer one');
    for (const file of signed) {
      const replaced = await em.execute<{ id: string }[]>(`update document set working_sha256 = ? where id = ? and working_sha256 is not distinct from ? returning id`, [
        file.sha256,
        file.documentId,
        file.workingBefore,
      ]);
      // Another signer's signature landed on this document since it was prepared: signing again
      // prepares it over that one (the values and the earlier signature both stay covered).
      if (replaced.length === 0) throw changed('another signer signed the document while you did; sign again over their signature');
    }
    const workflow: Workflow = {
      em,
      auditKey: context.auditKey,
      publicUrl: context.publicUrl,
      teamId: row.team_id,
      envelopeId: row.envelope_id,
      now: context.clock.now(),
      actor: { type: 'agent', id: row.agent_id },
      request: context.metadata,
    };
    const fields = await em.find(Field, { recipient }, { orderBy: { createdAt: 'asc', identifier: 'asc' } });
    await completeSigner(workflow, {
      recipient,
      fields,
      agentId: row.agent_id,
      personIndex: row.person_index,
      consent: row.consent,
      signature: {
        level: row.level,
        trustServiceId: row.trust_service_id,
        certificate: { subject: certificate.subject, issuer: certificate.issuer, serialNumber: certificate.serialNumber, fingerprint256: certificate.fingerprint256 },
        documents: signed.map((file) => ({ documentId: file.documentId, sha256: file.sha256 })),
      },
    });
    await em.flush();
  });
}
