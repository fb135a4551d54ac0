import { restClient, type TestApp } from './harness.ts';
import { createReadyTemplate } from './templates.ts';

/**
 * A template a public link can serve: the ready template's variable `buyer` signer (order 1) and a
 * `countersigner` the template assigns a contact of the team (order 2), each with a signature.
 */
export async function publicLinkTemplate(app: TestApp, apiKey: string, options: { countersignerEmail?: string } = {}) {
  const rest = restClient(app, apiKey);
  const ready = await createReadyTemplate(app, apiKey, { name: 'Membership form' });
  const contact = (await rest.post('/contacts', { name: 'Cora Countersigner', email: options.countersignerEmail ?? 'cora@example.com' })).body.payload.contact;
  const counter = (
    await rest.post(`/templates/${ready.templateId}/recipients`, { recipient: { type: 'signer', identifier: 'countersigner', roleName: 'Countersigner', order: 2, contactId: contact.id } })
  ).body.payload.recipient;
  const field = await rest.post(`/templates/${ready.templateId}/fields`, {
    fields: [
      {
        type: 'simple_signature',
        recipientId: counter.id,
        identifier: 'counter-signature',
        views: [{ documentId: ready.documentId, page: 1, location: { x: 50, y: 700 }, size: { width: 160, height: 40 } }],
      },
    ],
  });
  if (field.status !== 200) throw new Error(JSON.stringify(field.body));
  return { ...ready, countersignerId: counter.id, contactId: contact.id };
}

/** Posts a public link's form as a browser would (url-encoded), without following the redirect. */
export async function postForm(app: TestApp, path: string, fields: Record<string, string>, headers: Record<string, string> = {}) {
  const response = await fetch(`${app.url}${path}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
  });
  const body = await response.text();
  return { status: response.status, headers: response.headers, body, error: /data-error="([^"]+)"/.exec(body)?.[1] ?? null, visit: /name="visit" value="([^"]+)"/.exec(body)?.[1] ?? null };
}

/** The slug of a link's url. */
export function slugOf(url: string): string {
  return new URL(url).pathname.split('/')[2]!;
}

/** The 6-digit code in a mail's text. */
export function codeIn(text: string | undefined): string | null {
  return /^\s*(\d{6})\s*$/m.exec(text ?? '')?.[1] ?? null;
}
