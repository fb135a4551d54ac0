import type { TestApp } from './harness.ts';

/** POST /verify of `bytes` (REST, multipart `document`): the status and the JSON body. */
export async function restVerify(app: Pick<TestApp, 'url'>, apiKey: string, bytes: Uint8Array): Promise<{ status: number; body: Record<string, any> }> {
  const form = new FormData();
  form.append('document', new Blob([new Uint8Array(bytes)], { type: 'application/pdf' }), 'file.pdf');
  const response = await fetch(`${app.url}/api/v1/key/verify`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: form });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** GraphQL verifySealedPdf of `bytes` (a multipart upload), with `selection`: the JSON answer. */
export async function graphqlVerify(app: Pick<TestApp, 'url'>, apiKey: string, bytes: Uint8Array, selection: string): Promise<Record<string, any>> {
  const upload = new FormData();
  upload.append('operations', JSON.stringify({ query: `query ($file: Upload!) { verifySealedPdf(file: $file) { ${selection} } }`, variables: { file: null } }));
  upload.append('map', JSON.stringify({ 0: ['variables.file'] }));
  upload.append('0', new Blob([new Uint8Array(bytes)], { type: 'application/pdf' }), 'file.pdf');
  const response = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-service-api-key': apiKey }, body: upload });
  return (await response.json()) as Record<string, any>;
}
