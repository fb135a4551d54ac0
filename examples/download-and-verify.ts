/**
 * Download a finalized envelope's sealed PDFs and its evidence package, then verify them offline:
 * the package's signed manifest, every part against it, the downloaded PDFs against the package,
 * and the links of the audit chain. After the downloads nothing here needs the service.
 *
 *   ENVELOPE_API_KEY=… node examples/download-and-verify.ts ENVELOPE_ID OUT_DIR
 *   node examples/download-and-verify.ts --verify-only OUT_DIR      (again later, offline)
 *
 * Needs `openssl` for the manifest's CMS signature. The PDFs' own PAdES seals can be checked with
 * any PDF signature validator (pdfsig, Acrobat); the service's `npm run cli -- verify-package`
 * does every check at once, the audit chain's keyed hashes too when given the audit key.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { inflateRawSync } from 'node:zlib';
import { graphql as gql } from './generated/graphql/index.ts';
import { ApiError, apiKey, graphql, report, serviceUrl } from './shared.ts';

const Documents = gql(`
  query ExampleSealedDocuments($id: ID!) {
    envelope(id: $id) { id name status documents { id name } }
  }
`);

type Part = { path: string; kind: string; sha256: string; byteSize: number; documentId?: string };
type Manifest = { envelopeId: string; status: string; chain: { length: number; headHash: string }; parts: Part[] };
/** Where the downloads went: what --verify-only reads again. */
type Downloads = { envelopeId: string; documents: { documentId: string; file: string }[]; evidence: string };

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** GET a file with the key; a 503 (sealing still running) is retried after its Retry-After. */
async function download(route: string, file: string): Promise<void> {
  for (let attempt = 1; ; attempt += 1) {
    const response = await fetch(`${serviceUrl}/api/v1/key${route}`, { headers: { 'x-service-api-key': apiKey() } });
    if (response.ok) {
      fs.writeFileSync(file, Buffer.from(await response.arrayBuffer()));
      return;
    }
    const { error } = (await response.json()) as { error: { name: string; description: string; context: Record<string, unknown> } };
    if (response.status !== 503 || attempt === 10) throw new ApiError(error.name, error.description, error.context);
    await new Promise((resolve) => setTimeout(resolve, Number(response.headers.get('retry-after') ?? 5) * 1000));
  }
}

/** The entries of a ZIP by name, read from its central directory (stored or deflated entries). */
function unzip(zip: Buffer): Map<string, Buffer> {
  const end = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (end < 0) throw new Error('not a ZIP file');
  const count = zip.readUInt16LE(end + 10);
  let offset = zip.readUInt32LE(end + 16);
  const entries = new Map<string, Buffer>();
  for (let index = 0; index < count; index += 1) {
    if (zip.readUInt32LE(offset) !== 0x02014b50) throw new Error('broken central directory');
    const method = zip.readUInt16LE(offset + 10);
    const compressedSize = zip.readUInt32LE(offset + 20);
    const nameLength = zip.readUInt16LE(offset + 28);
    const extraLength = zip.readUInt16LE(offset + 30);
    const commentLength = zip.readUInt16LE(offset + 32);
    const localHeader = zip.readUInt32LE(offset + 42);
    const name = zip.toString('utf8', offset + 46, offset + 46 + nameLength);
    const dataStart = localHeader + 30 + zip.readUInt16LE(localHeader + 26) + zip.readUInt16LE(localHeader + 28);
    const data = zip.subarray(dataStart, dataStart + compressedSize);
    if (entries.has(name)) throw new Error(`two entries named ${name}`);
    entries.set(name, method === 0 ? data : inflateRawSync(data));
    offset += 46 + nameLength + extraLength + commentLength;
  }
  return entries;
}

/** Every problem found, by file; an empty list is a package that holds together. */
function verify(directory: string, downloads: Downloads): string[] {
  const problems: string[] = [];
  const entries = unzip(fs.readFileSync(path.join(directory, downloads.evidence)));
  const manifestBytes = entries.get('manifest.json');
  const signature = entries.get('manifest.json.p7s');
  if (!manifestBytes || !signature) return ['evidence package: no manifest.json or manifest.json.p7s'];

  // 1. The manifest is signed by the service's seal (a detached CMS signature).
  const scratch = fs.mkdtempSync(path.join(directory, '.verify-'));
  try {
    fs.writeFileSync(path.join(scratch, 'manifest.json'), manifestBytes);
    fs.writeFileSync(path.join(scratch, 'manifest.json.p7s'), signature);
    execFileSync(
      'openssl',
      [
        'cms',
        '-verify',
        '-binary',
        '-inform',
        'DER',
        '-in',
        path.join(scratch, 'manifest.json.p7s'),
        '-content',
        path.join(scratch, 'manifest.json'),
        '-noverify',
        '-out',
        path.join(scratch, 'out'),
      ],
      { stdio: 'pipe' },
    );
  } catch {
    problems.push('manifest.json: its signature (manifest.json.p7s) does not verify');
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as Manifest;
  if (manifest.envelopeId !== downloads.envelopeId) problems.push(`manifest.json: names envelope ${manifest.envelopeId}`);

  // 2. Every part is the one the signed manifest lists.
  for (const part of manifest.parts) {
    const bytes = entries.get(part.path);
    if (!bytes) problems.push(`${part.path}: missing from the package`);
    else if (sha256(bytes) !== part.sha256 || bytes.length !== part.byteSize) problems.push(`${part.path}: differs from the manifest`);
  }

  // 3. The PDFs downloaded are the sealed documents the package vouches for.
  for (const document of downloads.documents) {
    const part = manifest.parts.find((entry) => entry.kind === 'document' && entry.documentId === document.documentId);
    if (!part) problems.push(`${document.file}: not in the evidence package`);
    else if (sha256(fs.readFileSync(path.join(directory, document.file))) !== part.sha256) problems.push(`${document.file}: differs from the sealed document in the evidence package`);
  }

  // 4. The audit chain's links: line n is seq n, each names the previous line's hash, and the
  // last is the head the manifest signs. (Recomputing each hash needs the audit key.)
  const lines = (entries.get('audit/audit-chain.jsonl') ?? Buffer.alloc(0)).toString('utf8').split('\n').filter(Boolean);
  let previous = '0'.repeat(64);
  for (const [index, line] of lines.entries()) {
    const event = JSON.parse(line) as { seq: number; prevHash: string; hash: string };
    if (event.seq !== index + 1 || event.prevHash !== previous) {
      problems.push(`audit/audit-chain.jsonl: the chain breaks at line ${index + 1}`);
      break;
    }
    previous = event.hash;
  }
  if (lines.length !== manifest.chain.length || previous !== manifest.chain.headHash) problems.push('audit/audit-chain.jsonl: does not end at the head the manifest names');
  return problems;
}

const args = process.argv.slice(2);
if (args[0] === '--verify-only' && args[1]) {
  const downloads = JSON.parse(fs.readFileSync(path.join(args[1], 'downloads.json'), 'utf8')) as Downloads;
  const problems = verify(args[1], downloads);
  report('verified', { envelopeId: downloads.envelopeId, valid: problems.length === 0, problems });
  process.exit(problems.length === 0 ? 0 : 2);
}
const [envelopeId, directory] = args;
if (!envelopeId || !directory) {
  console.error('usage: node examples/download-and-verify.ts ENVELOPE_ID OUT_DIR | --verify-only OUT_DIR');
  process.exit(1);
}

const { envelope } = await graphql(Documents, { id: envelopeId });
if (envelope.status !== 'finalized') {
  console.error(`The envelope is ${envelope.status}: only a finalized envelope has sealed documents.`);
  process.exit(1);
}
fs.mkdirSync(directory, { recursive: true });
const downloads: Downloads = { envelopeId, documents: [], evidence: 'evidence.zip' };
for (const [index, document] of envelope.documents.entries()) {
  const file = `${index + 1}-${document.name.replace(/[^\w.-]+/g, '_')}`;
  await download(`/envelopes/${envelopeId}/documents/${document.id}/pdf`, path.join(directory, file));
  downloads.documents.push({ documentId: document.id, file });
}
await download(`/envelopes/${envelopeId}/evidence`, path.join(directory, downloads.evidence));
fs.writeFileSync(path.join(directory, 'downloads.json'), `${JSON.stringify(downloads, null, 2)}\n`);
report('downloaded', { envelopeId, files: [...downloads.documents.map((document) => document.file), downloads.evidence] });

const problems = verify(directory, downloads);
report('verified', { envelopeId, valid: problems.length === 0, problems });
process.exit(problems.length === 0 ? 0 : 2);
