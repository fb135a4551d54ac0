import fs from 'node:fs';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fieldTypes } from '../src/domain/field/field.entity.ts';
import { restRoutes } from '../src/rest/routes/index.ts';
import { httpStatusForError } from '../src/shared/errors.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { launchOfflineChromium, screenshotPath } from './helpers/browser.ts';
import { createDraftWithDocumentAndSigner } from './helpers/envelopes.ts';
import { restClient, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { png } from './helpers/images.ts';
import { buildEnvelope, SUBMIT_MUTATION, signingClient, tokenFor } from './helpers/signing.ts';
import { createReadyTemplate } from './helpers/templates.ts';

let app: TestApp;
let document: any;
beforeAll(async () => {
  app = await startTestApp({ env: { RATE_LIMIT_PER_MINUTE: '0', RATE_LIMIT_ANONYMOUS_PER_MINUTE: '0' } });
  const response = await fetch(`${app.url}/api/v1/key/openapi.json`);
  expect(response.status).toBe(200);
  document = await response.json();
});
afterAll(async () => {
  await app.close();
});

const operationKey = (method: string, path: string) => `${method.toUpperCase()} ${path}`;
const documentedOperations = () =>
  Object.entries(document.paths as Record<string, Record<string, any>>).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({ key: operationKey(method, path), path, method, operation })),
  );

describe('the OpenAPI document', () => {
  it('is served without a key and is valid OpenAPI 3.1', async () => {
    expect(document.openapi).toBe('3.1.0');
    const validation = await new Validator().validate(structuredClone(document));
    expect(validation.errors ?? []).toEqual([]);
    expect(validation.valid).toBe(true);
  });

  it('documents every route of the route table, and nothing else', () => {
    const routes = restRoutes.map((route) => operationKey(route.method, route.path.replace(/:(\w+)/g, '{$1}'))).sort();
    expect(
      documentedOperations()
        .map((operation) => operation.key)
        .sort(),
    ).toEqual(routes);
  });

  it('documents each error under its status, and every error name it uses is in docs/errors.md', () => {
    const errorsDoc = fs.readFileSync('docs/errors.md', 'utf8');
    for (const { key, operation } of documentedOperations()) {
      for (const name of operation['x-error-names'] as string[]) {
        expect(errorsDoc, `${key}: ${name}`).toContain(`\`${name}\``);
        const response = operation.responses[String(httpStatusForError(name))];
        expect(response?.description, `${key}: ${name}`).toContain(`\`${name}\``);
      }
    }
  });

  it('names every field type (issue 32 included) in the bodies that create and change fields, for envelopes and templates', () => {
    for (const owner of ['envelopes/{envelopeId}', 'templates/{templateId}']) {
      const create = document.paths[`/${owner}/fields`].post.requestBody.content['application/json'].schema;
      expect(create.properties.fields.items.properties.type.enum, owner).toEqual([...fieldTypes]);
      const change = document.paths[`/${owner}/fields/{fieldId}`].patch.requestBody.content['application/json'].schema;
      expect(change.properties.field.properties.type.enum, owner).toEqual([...fieldTypes]);
      expect(document.paths[`/${owner}/fields/{fieldId}`].delete['x-error-names'], owner).toContain('Field.InUse');
    }
  });

  it('says which routes honour Idempotency-Key exactly where the handler reads it', () => {
    for (const route of restRoutes) {
      expect(Boolean(route.doc.isIdempotent), `${route.method} ${route.path}`).toBe(route.handler.toString().includes('idempotencyKey'));
    }
  });

  it('answers every documented operation, called once with its documented example, with a documented status', { timeout: 120_000 }, async () => {
    const team = await seedTeam(app);
    const rest = restClient(app, team.apiKey);
    // A webhook first, so the changes below leave deliveries in its log.
    const webhook = await rest.post('/webhooks', { url: 'https://example.com/reference-hook' });
    const draft = await createDraftWithDocumentAndSigner(app, team.apiKey);
    const draftPdf = await makePdf({ pages: 1 });
    const field = await rest.post(`/envelopes/${draft.envelopeId}/fields`, {
      fields: [
        { type: 'text', identifier: 'note', recipientId: draft.signerId, views: [{ documentId: draft.documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 50, height: 20 } }] },
      ],
    });
    const contact = await rest.post('/contacts', { name: 'Ada Lovelace', email: 'ada@example.com' });
    const group = await rest.post('/contact-groups', { name: 'Reference group' });
    const user = await rest.post('/users', { name: 'Grace Hopper', email: `grace-${Date.now()}@example.com` });
    const template = await rest.post('/templates', { name: 'Reference template' });
    const templateId = template.body.payload.templateId;
    const templateDocument = await fetch(`${app.url}/api/v1/key/templates/${templateId}/documents`, {
      method: 'POST',
      headers: { 'x-service-api-key': team.apiKey },
      body: (() => {
        const form = new FormData();
        form.append('document', new Blob([draftPdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'template.pdf');
        return form;
      })(),
    }).then((response) => response.json() as Promise<any>);
    const templateRole = await rest.post(`/templates/${templateId}/recipients`, { recipient: { type: 'signer', identifier: 'client', roleName: 'Client' } });
    const templateField = await rest.post(`/templates/${templateId}/fields`, {
      fields: [
        {
          type: 'text',
          identifier: 'note',
          recipientId: templateRole.body.payload.recipient.id,
          views: [{ documentId: templateDocument.payload.document.id, page: 0, location: { x: 10, y: 10 }, size: { width: 50, height: 20 } }],
        },
      ],
    });
    // Sending and voiding get an envelope of their own, so the draft's deletions still find a draft.
    const sendable = await createDraftWithDocumentAndSigner(app, team.apiKey);
    await rest.post(`/envelopes/${sendable.envelopeId}/fields`, {
      fields: [
        {
          type: 'simple_signature',
          identifier: 'sign',
          recipientId: sendable.signerId,
          views: [{ documentId: sendable.documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 120, height: 30 } }],
        },
      ],
    });
    const scheduled = await createDraftWithDocumentAndSigner(app, team.apiKey);
    await rest.post(`/envelopes/${scheduled.envelopeId}/fields`, {
      fields: [
        {
          type: 'simple_signature',
          identifier: 'sign',
          recipientId: scheduled.signerId,
          views: [{ documentId: scheduled.documentId, page: 0, location: { x: 10, y: 10 }, size: { width: 120, height: 30 } }],
        },
      ],
    });
    // A send scheduled a day ahead: the schedule's cancellation (DELETE …/schedule) has one to cancel.
    const scheduling = await rest.put(`/envelopes/${scheduled.envelopeId}/send`, { sendAt: new Date(Date.now() + 24 * 3600 * 1000).toISOString() });
    expect(scheduling.status, JSON.stringify(scheduling.body)).toBe(200);
    const bulkSend = await rest.post(`/templates/${templateId}/bulk-sends`, { rows: [{ recipients: [{ identifier: 'client', agents: [{ info: { name: 'Bulk Reference' } }] }] }] });
    // On a template of its own: the reference template is deleted before the link's own deletion runs.
    const linkTemplate = await createReadyTemplate(app, team.apiKey);
    const publicLink = await rest.post(`/templates/${linkTemplate.templateId}/public-links`, { role: 'buyer' });
    // A signer's kept attachment, for the attachment reads (GET …/attachments/{fileId}).
    const attached = await buildEnvelope(app, team.apiKey, { recipients: [{ identifier: 'client', fields: [{ identifier: 'scan', type: 'attachment', required: true }] }] });
    expect((await rest.put(`/envelopes/${attached.envelopeId}/send`)).status).toBe(200);
    const signingToken = await tokenFor(app, attached.envelopeId, attached.recipients.client);
    const form = new FormData();
    form.append(
      'operations',
      JSON.stringify({ query: 'mutation($f: ID!, $file: Upload!) { uploadSigningAttachment(fieldId: $f, file: $file) { id } }', variables: { f: attached.fields.scan, file: null } }),
    );
    form.append('map', JSON.stringify({ 0: ['variables.file'] }));
    form.append('0', new Blob([png(8, 8) as Uint8Array<ArrayBuffer>]), 'scan.png');
    const uploaded = (await (await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'x-signing-token': signingToken }, body: form })).json()) as any;
    const fileId = uploaded.data.uploadSigningAttachment.id as string;
    const submitted = await signingClient(app, signingToken)(SUBMIT_MUTATION, { complete: true, values: [{ fieldId: attached.fields.scan, value: { files: [{ id: fileId }] } }] });
    expect(submitted.errors).toBeUndefined();
    const webhookId = webhook.body.payload.webhook.id;
    const deliveries = await rest.get(`/webhooks/${webhookId}/deliveries?limit=1`);
    const ids: Record<string, string> = {
      webhookId,
      deliveryId: deliveries.body.payload.deliveries[0].id,
      envelopeId: draft.envelopeId,
      documentId: draft.documentId,
      recipientId: draft.signerId,
      fieldId: field.body.payload.fields[0].id,
      contactId: contact.body.payload.contact.id,
      groupId: group.body.payload.contactGroup.id,
      userId: user.body.payload.user.id,
      templateId,
      bulkSendId: bulkSend.body.payload.bulkSendId,
      publicLinkId: publicLink.body.payload.publicLink.id,
    };
    const templateIds: Record<string, string> = {
      ...ids,
      documentId: templateDocument.payload.document.id,
      recipientId: templateRole.body.payload.recipient.id,
      fieldId: templateField.body.payload.fields[0].id,
    };
    const idsFor = (path: string) =>
      path.startsWith('/templates/')
        ? templateIds
        : path.includes('/attachments')
          ? { ...ids, envelopeId: attached.envelopeId, fileId }
          : /\/(send|void)$/.test(path)
            ? { ...ids, envelopeId: sendable.envelopeId }
            : /\/schedule$/.test(path)
              ? { ...ids, envelopeId: scheduled.envelopeId }
              : ids;
    const fill = (text: string, values: Record<string, string>) => text.replace(/<(\w+)>/g, (_, name) => values[name] ?? name);
    const pdf = await makePdf({ pages: 1 });
    // Deletions last, deepest paths first, so every operation finds what it names.
    const depth = (path: string) => path.split('/').length;
    const operations = documentedOperations().sort((a, b) =>
      a.method === 'delete' && b.method === 'delete' ? depth(b.path) - depth(a.path) : Number(a.method === 'delete') - Number(b.method === 'delete'),
    );
    const statuses: Record<string, number> = {};
    for (const { key, path, method, operation } of operations) {
      const values = idsFor(path);
      const url = `${app.url}/api/v1/key${path.replace(/\{(\w+)\}/g, (_, name) => values[name] ?? name)}`;
      const headers: Record<string, string> = { 'x-service-api-key': team.apiKey };
      let body: BodyInit | undefined;
      const content = operation.requestBody?.content;
      if (content?.['application/json']) {
        headers['content-type'] = 'application/json';
        body = fill(JSON.stringify(content['application/json'].example), values);
      } else if (content?.['multipart/form-data']) {
        const form = new FormData();
        form.append('document', new Blob([pdf as Uint8Array<ArrayBuffer>], { type: 'application/pdf' }), 'reference.pdf');
        body = form;
      }
      const response = await fetch(url, { method: method.toUpperCase(), headers, body });
      await response.arrayBuffer();
      statuses[key] = response.status;
      expect(Object.keys(operation.responses), `${key} answered ${response.status}`).toContain(String(response.status));
    }
    // Most succeed with real ids and the documented examples (the rest are documented refusals, such as Sandbox.Disabled).
    expect(Object.values(statuses).filter((status) => status === 200).length, JSON.stringify(statuses)).toBeGreaterThan(operations.length * 0.85);
  });
});

describe('the API reference page', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchOfflineChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
  });

  it('renders the document with no other host reachable and no script inline', async () => {
    const page = await browser.newPage();
    const foreign: string[] = [];
    const errors: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(app.url) && !request.url().startsWith('data:')) foreign.push(request.url());
    });
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    page.on('pageerror', (error) => errors.push(error.message));
    const response = await page.goto(`${app.url}/api/v1/key/docs`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page.getByText('Create a draft envelope').first().waitFor({ timeout: 30_000 });
    await page.getByText('Envelope service REST API').first().waitFor();
    await page.screenshot({ path: screenshotPath('api-reference.png'), fullPage: false });
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  }, 90_000);
});
