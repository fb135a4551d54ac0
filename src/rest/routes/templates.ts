import { PAGE_QUERY } from '../openapi-shared.ts';
import { createFieldsInput, updateFieldInput } from '../../domain/field/field.service.ts';
import { FULL_TEMPLATE_INCLUDE, readTemplate, readTemplatePage } from '../../domain/template/template.read.ts';
import { createTemplate, createTemplateInput, deleteTemplate, updateTemplate, updateTemplateInput } from '../../domain/template/template.service.ts';
import { DocumentTooLargeError } from '../../domain/document/document.errors.ts';
import { addDocumentInput, stageDocumentFile, updateDocumentInput } from '../../domain/document/document.service.ts';
import { addTemplateDocument, checkTemplateUploadTarget, deleteTemplateDocument, updateTemplateDocument } from '../../domain/template/template-document.service.ts';
import { createTemplateFields, deleteTemplateField, updateTemplateField } from '../../domain/template/template-field.service.ts';
import { addTemplateRecipient, createRoleInput, deleteTemplateRecipient, updateRoleInput, updateTemplateRecipient } from '../../domain/template/template-recipient.service.ts';
import { jumpstartEnvelope, jumpstartInput } from '../../domain/template/jumpstart.service.ts';
import { readJsonObject } from '../../http/body.ts';
import { receiveMultipartUpload } from '../../http/multipart.ts';
import { readRecipientBody } from './recipients.ts';
import { integerQuery } from '../query.ts';
import type { RestRoute } from '../router.ts';

/** Spec §4.7 and contract §5: templates. Every answer shows a template with its documents, roles and fields. */
export const templateRoutes: RestRoute[] = [
  // Spec §4.5: a draft envelope from a template in one request.
  {
    method: 'POST',
    path: '/envelopes/jumpstart/:templateId',
    doc: { summary: 'Create a draft envelope from a template', body: { schema: jumpstartInput, example: { name: 'NDA with Ada', recipients: [{ identifier: 'client', agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] }] } }, isIdempotent: true, errors: ['Template.NotReady', 'Jumpstart.UnknownRecipient', 'Jumpstart.DuplicateRecipient', 'Envelope.CapacityExceeded', 'Request.IdempotencyKeyReused'] },
    async handler({ request, params, context }) {
      const envelope = await jumpstartEnvelope(context, { templateId: params.templateId, input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { envelopeId: envelope.id };
    },
  },
  {
    method: 'POST',
    path: '/templates',
    doc: { summary: 'Create a template', body: { schema: createTemplateInput, example: { name: 'Mutual NDA', description: 'Our standard NDA' } }, isIdempotent: true },
    async handler({ request, context }) {
      const template = await createTemplate(context, { input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { templateId: template.id };
    },
  },
  {
    method: 'GET',
    path: '/templates',
    doc: { summary: 'List templates your team owns or is in the scope of', query: PAGE_QUERY },
    async handler({ url, context }) {
      return readTemplatePage(context, { limit: integerQuery(url, 'limit'), cursor: url.searchParams.get('cursor') ?? undefined }, FULL_TEMPLATE_INCLUDE);
    },
  },
  {
    method: 'GET',
    path: '/templates/:templateId',
    doc: { summary: 'Read a template with its documents, roles and fields' },
    async handler({ params, context }) {
      return { template: await readTemplate(context, params.templateId, FULL_TEMPLATE_INCLUDE) };
    },
  },
  {
    method: 'PATCH',
    path: '/templates/:templateId',
    doc: { summary: 'Change a template', body: { schema: updateTemplateInput, example: { description: 'Our standard NDA, 2026' } }, errors: ['Template.NotOwner'] },
    async handler({ request, params, context }) {
      await updateTemplate(context, { templateId: params.templateId, input: await readJsonObject(request) });
      return { template: await readTemplate(context, params.templateId, FULL_TEMPLATE_INCLUDE) };
    },
  },
  {
    method: 'DELETE',
    path: '/templates/:templateId',
    doc: { summary: 'Delete a template', errors: ['Template.NotOwner'] },
    async handler({ params, context }) {
      await deleteTemplate(context, { templateId: params.templateId });
      return { deleted: true };
    },
  },
  // Documents: the envelope's multipart upload, checked before the body is read.
  {
    method: 'POST',
    path: '/templates/:templateId/documents',
    doc: { summary: 'Upload a PDF to a template', multipart: { filePart: 'document', fields: addDocumentInput }, isIdempotent: true, errors: ['Template.NotOwner', 'Template.CapacityExceeded', 'Document.TooLarge', 'Document.NotPdf', 'Document.InvalidPdf', 'Document.Encrypted', 'Document.InspectionLimitExceeded', 'Document.UploadIncomplete', 'Request.PayloadTooLarge', 'Request.Timeout', 'Server.Busy', 'Storage.Full'] },
    async handler({ request, nodeRequest, params, context }) {
      await checkTemplateUploadTarget(context, { templateId: params.templateId });
      const maxFileBytes = context.limits.maxDocumentBytes;
      const upload = await receiveMultipartUpload({
        request,
        nodeRequest,
        fileField: 'document',
        maxFileBytes,
        tooLarge: () => new DocumentTooLargeError(maxFileBytes),
        stage: (stream, filename) => stageDocumentFile(context, { stream, filename }),
        discard: (staged) => staged.blob.discard(),
      });
      const document = await addTemplateDocument(context, {
        templateId: params.templateId,
        upload: upload.staged,
        fields: upload.fields,
        idempotencyKey: context.idempotencyKey,
      });
      return { document };
    },
  },
  {
    method: 'PATCH',
    path: '/templates/:templateId/documents/:documentId',
    doc: { summary: 'Rename or reorder a template document', body: { schema: updateDocumentInput, example: { name: 'NDA.pdf' } }, errors: ['Template.NotOwner'] },
    async handler({ request, params, context }) {
      const document = await updateTemplateDocument(context, { templateId: params.templateId, documentId: params.documentId, input: await readJsonObject(request) });
      return { document };
    },
  },
  {
    method: 'DELETE',
    path: '/templates/:templateId/documents/:documentId',
    doc: { summary: 'Remove a template document', errors: ['Template.NotOwner'] },
    async handler({ params, context }) {
      await deleteTemplateDocument(context, { templateId: params.templateId, documentId: params.documentId });
      return { deleted: true };
    },
  },
  // Roles: `{ recipient: {...} }` as for envelopes.
  {
    method: 'POST',
    path: '/templates/:templateId/recipients',
    doc: { summary: 'Add a template role', body: { schema: createRoleInput, wrap: 'recipient', example: { recipient: { type: 'signer', identifier: 'client', roleName: 'Client' } } }, isIdempotent: true, errors: ['Template.NotOwner', 'Template.CapacityExceeded', 'Recipient.DuplicateIdentifier'] },
    async handler({ request, params, context }) {
      const recipient = await addTemplateRecipient(context, {
        templateId: params.templateId,
        input: await readRecipientBody(request),
        idempotencyKey: context.idempotencyKey,
      });
      return { recipient };
    },
  },
  {
    method: 'PATCH',
    path: '/templates/:templateId/recipients/:recipientId',
    doc: { summary: 'Change a template role', body: { schema: updateRoleInput, wrap: 'recipient', example: { recipient: { fixed: true } } }, errors: ['Template.NotOwner', 'Recipient.HasFields'] },
    async handler({ request, params, context }) {
      const recipient = await updateTemplateRecipient(context, {
        templateId: params.templateId,
        recipientId: params.recipientId,
        input: await readRecipientBody(request),
      });
      return { recipient };
    },
  },
  {
    method: 'DELETE',
    path: '/templates/:templateId/recipients/:recipientId',
    doc: { summary: 'Remove a template role (and its fields)', errors: ['Template.NotOwner', 'Recipient.HostRecipientBound', 'Recipient.DelegatorRecipientBound'] },
    async handler({ params, context }) {
      await deleteTemplateRecipient(context, { templateId: params.templateId, recipientId: params.recipientId });
      return { deleted: true };
    },
  },
  // Fields: the envelope's body (spec §4.7: "same body as 4.4").
  {
    method: 'POST',
    path: '/templates/:templateId/fields',
    doc: { summary: 'Place template fields (all or none)', body: { schema: createFieldsInput, example: { fields: [{ type: 'simple_signature', identifier: 'buyer-signature', recipientId: '<recipientId>', views: [{ documentId: '<documentId>', page: 0, location: { x: 72, y: 700 }, size: { width: 180, height: 40 } }] }] } }, isIdempotent: true, errors: ['Template.NotOwner', 'Template.CapacityExceeded'] },
    async handler({ request, params, context }) {
      const fields = await createTemplateFields(context, { templateId: params.templateId, input: await readJsonObject(request), idempotencyKey: context.idempotencyKey });
      return { fields };
    },
  },
  {
    method: 'PATCH',
    path: '/templates/:templateId/fields/:fieldId',
    doc: { summary: 'Change a template field', body: { schema: updateFieldInput, example: { field: { required: false } } }, errors: ['Template.NotOwner'] },
    async handler({ request, params, context }) {
      const field = await updateTemplateField(context, { templateId: params.templateId, fieldId: params.fieldId, input: await readJsonObject(request) });
      return { field };
    },
  },
  {
    method: 'DELETE',
    path: '/templates/:templateId/fields/:fieldId',
    doc: { summary: 'Remove a template field', errors: ['Template.NotOwner'] },
    async handler({ params, context }) {
      await deleteTemplateField(context, { templateId: params.templateId, fieldId: params.fieldId });
      return { deleted: true };
    },
  },
];
