/**
 * A legacy REST caller: the whole flow of the service this one replaced, with plain `fetch` and the
 * contract's `{ version, success, payload }` bodies: create a draft, upload a PDF, add a signer,
 * place a signature field, send, read the envelope back. Request bodies are typed from the
 * OpenAPI document (examples/generated/rest.ts), so a changed REST contract fails the build.
 *
 *   ENVELOPE_API_KEY=… node examples/legacy-rest.ts contract.pdf "Ada Lovelace" ada@example.com
 */
import fs from 'node:fs';
import path from 'node:path';
import type { components } from './generated/rest.ts';
import { ApiError, apiKey, type JsonBody, report, serviceUrl } from './shared.ts';

type ErrorBody = components['schemas']['Error'];

const api = `${serviceUrl}/api/v1/key`;

/** One call: the payload of a success, or the error's name thrown. */
async function call<Payload>(method: string, route: string, body?: unknown): Promise<Payload> {
  const response = await fetch(`${api}${route}`, {
    method,
    headers: { 'x-service-api-key': apiKey(), ...(body instanceof FormData || body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body instanceof FormData ? body : body === undefined ? undefined : JSON.stringify(body),
  });
  const answer = (await response.json()) as { success: true; payload: Payload } | ErrorBody;
  if (!answer.success) throw new ApiError(answer.error.name, answer.error.description, answer.error.context);
  return answer.payload;
}

const [pdfPath, name, email] = process.argv.slice(2);
if (!pdfPath || !name || !email) {
  console.error('usage: node examples/legacy-rest.ts FILE.pdf NAME EMAIL');
  process.exit(1);
}

const draft: JsonBody<'postEnvelopes'> = { name: `Agreement with ${name}`, expirationPeriodDays: 14 };
const { envelopeId } = await call<{ envelopeId: string }>('POST', '/envelopes', draft);

const form = new FormData();
form.append('document', new Blob([fs.readFileSync(pdfPath)], { type: 'application/pdf' }), path.basename(pdfPath));
const { document } = await call<{ document: { id: string; pageCount: number } }>('POST', `/envelopes/${envelopeId}/documents`, form);

const signer: JsonBody<'postEnvelopesByEnvelopeIdRecipients'> = {
  recipient: { type: 'signer', identifier: 'client', roleName: 'Client', agents: [{ info: { name, email } }] },
};
const { recipient } = await call<{ recipient: { id: string } }>('POST', `/envelopes/${envelopeId}/recipients`, signer);

const fields: JsonBody<'postEnvelopesByEnvelopeIdFields'> = {
  fields: [
    {
      type: 'simple_signature',
      recipientId: recipient.id,
      identifier: 'signature',
      views: [{ documentId: document.id, page: 0, location: { x: 72, y: 700 }, size: { width: 180, height: 48 } }],
    },
  ],
};
await call('POST', `/envelopes/${envelopeId}/fields`, fields);

// A dry run first says what would stop the send, all at once, without sending.
const { dryRun } = await call<{ dryRun: { wouldSend: boolean; problems: { name: string }[] } }>('PUT', `/envelopes/${envelopeId}/send?dryRun=true`, {});
if (!dryRun.wouldSend) throw new Error(`cannot send: ${dryRun.problems.map((problem) => problem.name).join(', ')}`);
await call('PUT', `/envelopes/${envelopeId}/send`, {});

const read = await call<{ envelope: { status: string }; recipients: { id: string; agents: { info: { email: string | null } }[] }[] }>(
  'GET',
  `/envelopes/${envelopeId}?includeRecipients=true`,
);
report('sent', {
  envelopeId,
  documentId: document.id,
  recipientId: recipient.id,
  status: read.envelope.status,
  emails: read.recipients.flatMap((entry) => entry.agents.map((agent) => agent.info.email)),
});
