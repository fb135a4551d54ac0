import { Envelope, type EnvelopeStatus } from '../../src/domain/envelope/envelope.entity.ts';
import { makePdf } from '../fixtures/pdfs.ts';
import { restClient, type TestApp } from './harness.ts';

/**
 * Moves an envelope out of draft directly in the database, standing in for the send operation
 * (which belongs to the workflow) in tests of draft-only rules.
 */
export async function forceEnvelopeStatus(app: TestApp, envelopeId: string, status: EnvelopeStatus): Promise<void> {
  await app.orm.em.fork().nativeUpdate(Envelope, { id: envelopeId }, { status, sentAt: new Date() });
}

/** Uploads a PDF through REST multipart and returns the parsed answer. */
export async function uploadDocument(
  app: TestApp,
  apiKey: string,
  envelopeId: string,
  file: { bytes: Uint8Array; filename?: string; type?: string },
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('document', new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.type ?? 'application/pdf' }), file.filename ?? 'contract.pdf');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const response = await fetch(`${app.url}/api/v1/key/envelopes/${envelopeId}/documents`, {
    method: 'POST',
    headers: { 'x-service-api-key': apiKey, ...headers },
    body: form,
  });
  return { status: response.status, body: await response.json() };
}

/** A GraphQL multipart request (graphql-multipart-request-spec) uploading one file. */
export async function uploadDocumentThroughGraphql(
  app: TestApp,
  apiKey: string,
  envelopeId: string,
  file: { bytes: Uint8Array; filename?: string },
  input: Record<string, unknown> = {},
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append(
    'operations',
    JSON.stringify({
      query:
        'mutation($envelopeId: ID!, $input: AddDocumentInput!) { addDocument(envelopeId: $envelopeId, input: $input) { id name order pageCount pages { index width height rotation } sha256 context } }',
      variables: { envelopeId, input: { ...input, file: null } },
    }),
  );
  form.append('map', JSON.stringify({ 0: ['variables.input.file'] }));
  form.append('0', new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), file.filename ?? 'upload.pdf');
  const response = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: form });
  return { status: response.status, body: await response.json() };
}

export type DraftSetup = {
  envelopeId: string;
  documentId: string;
  signerId: string;
  pageCount: number;
};

/** A draft with one 3-page A4 document and one signer, built through REST. */
export async function createDraftWithDocumentAndSigner(app: TestApp, apiKey: string): Promise<DraftSetup> {
  const rest = restClient(app, apiKey);
  const created = await rest.post('/envelopes', { name: 'Sales agreement', expirationPeriodDays: 14 });
  const envelopeId = created.body.payload.envelopeId;
  const document = await uploadDocument(app, apiKey, envelopeId, { bytes: await makePdf({ pages: 3 }) });
  const signer = await rest.post(`/envelopes/${envelopeId}/recipients`, {
    recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1, required: true, agents: [{ info: { name: 'Ada Buyer', email: 'ada@example.com' } }] },
  });
  return { envelopeId, documentId: document.body.payload.document.id, signerId: signer.body.payload.recipient.id, pageCount: 3 };
}

export const unknownId = '00000000-0000-4000-8000-000000000000';
