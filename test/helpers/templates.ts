import { makePdf } from '../fixtures/pdfs.ts';
import { restClient, type TestApp } from './harness.ts';

/** Uploads a PDF to a template through REST multipart and returns the parsed answer. */
export async function uploadTemplateDocument(
  app: TestApp,
  apiKey: string,
  templateId: string,
  file: { bytes: Uint8Array; filename?: string; type?: string },
  fields: Record<string, string> = {},
  headers: Record<string, string> = {},
): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('document', new Blob([file.bytes as Uint8Array<ArrayBuffer>], { type: file.type ?? 'application/pdf' }), file.filename ?? 'template.pdf');
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const response = await fetch(`${app.url}/api/v1/key/templates/${templateId}/documents`, {
    method: 'POST',
    headers: { 'x-service-api-key': apiKey, ...headers },
    body: form,
  });
  return { status: response.status, body: await response.json() };
}

/** A GraphQL multipart upload of one PDF to a template. */
export async function uploadTemplateDocumentByGraphql(app: TestApp, apiKey: string, templateId: string, bytes: Uint8Array, name?: string) {
  const form = new FormData();
  form.append(
    'operations',
    JSON.stringify({
      query: 'mutation($t: ID!, $input: AddDocumentInput!) { addTemplateDocument(templateId: $t, input: $input) { id name pageCount sha256 } }',
      variables: { t: templateId, input: { file: null, name } },
    }),
  );
  form.append('map', JSON.stringify({ 0: ['variables.input.file'] }));
  form.append('0', new Blob([bytes as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'upload.pdf');
  const response = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: form });
  return { status: response.status, body: (await response.json()) as any };
}

export type ReadyTemplate = { templateId: string; documentId: string; signerId: string; fieldId: string; sha256: string };

/** A template ready for a jumpstart: one 2-page document, one variable signer role, one signature field. */
export async function createReadyTemplate(app: TestApp, apiKey: string, options: { name?: string; teamScope?: string[] } = {}): Promise<ReadyTemplate> {
  const rest = restClient(app, apiKey);
  const templateId = (await rest.post('/templates', { name: options.name ?? 'Sales template', teamScope: options.teamScope ?? [] })).body.payload.templateId;
  const document = (await uploadTemplateDocument(app, apiKey, templateId, { bytes: await makePdf({ pages: 2 }) })).body.payload.document;
  const signer = (await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1 } })).body.payload.recipient;
  const fields = await rest.post(`/templates/${templateId}/fields`, {
    fields: [
      {
        type: 'simple_signature',
        recipientId: signer.id,
        identifier: 'buyer-signature',
        views: [{ documentId: document.id, page: 1, location: { x: 50, y: 700 }, size: { width: 160, height: 40 } }],
      },
    ],
  });
  return { templateId, documentId: document.id, signerId: signer.id, fieldId: fields.body.payload.fields[0].id, sha256: document.sha256 };
}
