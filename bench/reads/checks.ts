/**
 * Before anything is timed, the servers must be shown to answer the same thing: otherwise a
 * faster peer might simply be doing less. Ours and the bare handlers must agree exactly;
 * PostGraphile's answer has its own shape, so it is compared on content (ids, order, counts).
 */
import { isDeepStrictEqual } from 'node:util';
import type { Request } from './load.ts';

export async function fetchText(request: Request): Promise<string> {
  const response = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${request.method} ${request.url} answered ${response.status}: ${text.slice(0, 500)}`);
  return text;
}

/**
 * Exactly `count` requests, `concurrency` at a time, each read to the end. The counted pass uses
 * this rather than autocannon, whose `amount` mode may send a few requests more than it reports
 * (those in flight when it stops), which would inflate statements per request.
 */
export async function sendExactly(request: Request, count: number, concurrency: number): Promise<void> {
  let sent = 0;
  const worker = async () => {
    while (sent < count) {
      sent += 1;
      await fetchText(request);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

/** Where two texts first differ, with some context, for a readable failure. */
function firstDifference(a: string, b: string): string {
  let index = 0;
  while (index < a.length && index < b.length && a[index] === b[index]) index += 1;
  return `at byte ${index}:\n  ours: …${a.slice(Math.max(0, index - 80), index + 80)}…\n  peer: …${b.slice(Math.max(0, index - 80), index + 80)}…`;
}

/** Same JSON value (GraphQL: the spec only needs deep equality); reports whether the bytes match too. */
export function checkDeepEqual(label: string, ours: string, peer: string): { identicalBytes: boolean } {
  if (!isDeepStrictEqual(JSON.parse(ours), JSON.parse(peer))) throw new Error(`${label}: the answers differ ${firstDifference(ours, peer)}`);
  return { identicalBytes: ours === peer };
}

/** Byte-for-byte the same body (REST: the compatibility layer promises exact payloads). */
export function checkIdenticalBytes(label: string, ours: string, peer: string): void {
  if (ours !== peer) throw new Error(`${label}: the bodies differ ${firstDifference(ours, peer)}`);
}

type OurEnvelope = {
  id: string;
  documents: { id: string }[];
  recipients: { id: string; agents: { id: string }[] }[];
  fields: { id: string; views: unknown[] }[];
};
type Nodes<T> = { nodes: T[] };
type PostGraphileEnvelope = {
  rowId: string;
  documentsByEnvelopeId: Nodes<{ rowId: string }>;
  recipientsByEnvelopeId: Nodes<{ rowId: string; agentsByRecipientId: Nodes<{ rowId: string }> }>;
  fieldsByEnvelopeId: Nodes<{ rowId: string; fieldViewsByFieldId: Nodes<unknown> }>;
};

const sorted = (ids: string[]) => [...ids].sort();

/**
 * PostGraphile must return the same envelopes in the same order and, for each, the same
 * documents (in order), the same recipients and fields (as sets: it cannot order them as we do,
 * see queries.ts), each recipient's agents in order, and the same number of views per field.
 */
export function checkSameContent(label: string, oursText: string, peerText: string): void {
  const ours = (JSON.parse(oursText) as { data: { envelopes: Nodes<OurEnvelope> } }).data.envelopes.nodes;
  const peerBody = JSON.parse(peerText) as { data?: { allEnvelopes: Nodes<PostGraphileEnvelope> }; errors?: unknown };
  if (!peerBody.data) throw new Error(`${label}: PostGraphile answered errors: ${JSON.stringify(peerBody.errors)}`);
  const peer = peerBody.data.allEnvelopes.nodes;
  const fail = (what: string) => {
    throw new Error(`${label}: ${what}`);
  };
  if (
    !isDeepStrictEqual(
      peer.map((envelope) => envelope.rowId),
      ours.map((envelope) => envelope.id),
    )
  )
    fail('the envelope ids or their order differ');
  ours.forEach((envelope, index) => {
    const other = peer[index];
    const where = `envelope ${envelope.id}`;
    if (
      !isDeepStrictEqual(
        other.documentsByEnvelopeId.nodes.map((document) => document.rowId),
        envelope.documents.map((document) => document.id),
      )
    ) {
      fail(`${where}: documents differ`);
    }
    const recipients = new Map(other.recipientsByEnvelopeId.nodes.map((recipient) => [recipient.rowId, recipient]));
    if (!isDeepStrictEqual(sorted([...recipients.keys()]), sorted(envelope.recipients.map((recipient) => recipient.id)))) fail(`${where}: recipients differ`);
    for (const recipient of envelope.recipients) {
      const agents = recipients.get(recipient.id)!.agentsByRecipientId.nodes.map((agent) => agent.rowId);
      if (
        !isDeepStrictEqual(
          agents,
          recipient.agents.map((agent) => agent.id),
        )
      )
        fail(`${where}: agents of recipient ${recipient.id} differ`);
    }
    const fields = new Map(other.fieldsByEnvelopeId.nodes.map((field) => [field.rowId, field]));
    if (!isDeepStrictEqual(sorted([...fields.keys()]), sorted(envelope.fields.map((field) => field.id)))) fail(`${where}: fields differ`);
    for (const field of envelope.fields) {
      if (fields.get(field.id)!.fieldViewsByFieldId.nodes.length !== field.views.length) fail(`${where}: views of field ${field.id} differ`);
    }
  });
}

/** How many objects an answer of ours holds (envelopes and everything nested), for the log. */
export function countObjects(oursText: string): number {
  const nodes = (JSON.parse(oursText) as { data: { envelopes: Nodes<OurEnvelope> } }).data.envelopes.nodes;
  return nodes.reduce(
    (total, envelope) =>
      total +
      1 +
      envelope.documents.length +
      envelope.recipients.reduce((sum, recipient) => sum + 1 + recipient.agents.length, 0) +
      envelope.fields.reduce((sum, field) => sum + 1 + field.views.length, 0),
    0,
  );
}
