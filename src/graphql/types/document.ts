import type { Readable } from 'node:stream';
import { GraphQLError } from 'graphql';
import { Upload } from 'graphql-upload-minimal';
import { documentStatuses } from '../../domain/document/document.entity.ts';
import { DocumentUploadIncompleteError } from '../../domain/document/document.errors.ts';
import { addDocument, deleteDocument, stageDocumentUpload, updateDocument } from '../../domain/document/document.service.ts';
import { type DocumentData, type PageData, readDocument } from '../../domain/owner/owner.read.ts';
import { builder } from '../builder.ts';
import { JSON_VALUE_KEYS, withoutNulls } from '../input.ts';
import { nested } from '../selection.ts';
import { uploadedFileStream } from '../uploads.ts';
import { DeletedPayload } from './common.ts';
import { EnvelopeType } from './envelope.ts';
import { GRAPHQL_OWNERS, type GraphqlOwner, ownerIdArg, ownerMutationName, ownerOfArgs } from './owner.ts';

/**
 * The file of an upload as a stream. The multipart library reports a body that broke off inside
 * the file by rejecting or throwing here, before the domain sees any bytes: that is the caller's
 * `Document.UploadIncomplete`, the same answer REST gives for a cut-off body.
 */
export async function openUpload(file: Upload): Promise<{ stream: Readable; filename: string | undefined }> {
  try {
    const upload = await file.promise;
    return { stream: uploadedFileStream(upload.createReadStream()), filename: upload.filename || undefined };
  } catch {
    throw new DocumentUploadIncompleteError();
  }
}

builder.scalarType('Upload', {
  description: 'A file sent with the GraphQL multipart request spec (https://github.com/jaydenseric/graphql-multipart-request-spec).',
  serialize: () => {
    throw new GraphQLError('Upload is an input-only scalar');
  },
  parseValue: (value) => {
    if (value instanceof Upload) return value;
    throw new GraphQLError('Upload must be a file part of a multipart request');
  },
});

const DocumentStatusEnum = builder.enumType('DocumentStatus', {
  description: 'completed (all required fields on it submitted), declined, or voided (its envelope was voided).',
  values: documentStatuses,
});

export const PageType = builder.objectRef<PageData>('Page').implement({
  description: 'One page of a document, sized in PDF points (1/72 inch) as displayed, rotation applied.',
  fields: (t) => ({
    index: t.exposeInt('index', { description: 'Zero-based page index, as used in field views.' }),
    width: t.exposeFloat('width'),
    height: t.exposeFloat('height'),
    rotation: t.exposeInt('rotation', { description: 'The page rotation in degrees (0, 90, 180, 270).' }),
  }),
});

export const DocumentType = builder.objectRef<DocumentData>('Document').implement({
  description: 'A PDF in an envelope. The original is stored once, addressed by its SHA-256.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name', { description: 'Shown to recipients; at most 140 characters.' }),
    order: t.exposeInt('order', { description: 'Zero-based display order.' }),
    status: t.field({ type: DocumentStatusEnum, nullable: true, resolve: (document) => document.status as (typeof documentStatuses)[number] | null }),
    context: t.field({ type: 'JSONObject', resolve: (document) => document.context }),
    pageCount: t.exposeInt('pageCount'),
    pages: t.field({ type: [PageType], resolve: (document) => document.pages }),
    sha256: t.exposeString('sha256', { description: 'SHA-256 of the uploaded original.' }),
    byteSize: t.exposeFloat('byteSize'),
    createdAt: t.field({ type: 'DateTime', resolve: (document) => document.createdAt }),
  }),
});

builder.objectField(EnvelopeType, 'documents', (t) =>
  t.field({
    type: [DocumentType],
    description: 'The documents, in display order.',
    resolve: (envelope) => nested(envelope.documents, 'Envelope.documents'),
  }),
);

export const AddDocumentInput = builder.inputType('AddDocumentInput', {
  description: 'An upload: the file part of a GraphQL multipart request, and its display details.',
  fields: (t) => ({
    file: t.field({ type: 'Upload', required: true, description: 'The PDF, at most 48 MB.' }),
    name: t.string({ required: false, description: 'At most 140 characters; defaults to the file name.' }),
    order: t.int({ required: false, description: 'Zero-based; defaults to after the last document.' }),
    context: t.field({ type: 'JSONObject', required: false }),
  }),
});

export const UpdateDocumentInput = builder.inputType('UpdateDocumentInput', {
  description: 'Only the given keys change. Drafts only.',
  fields: (t) => ({
    name: t.string({ required: false }),
    order: t.int({ required: false }),
    context: t.field({ type: 'JSONObject', required: false }),
  }),
});

/**
 * The document mutations of an owner (an envelope's addDocument, updateDocument, deleteDocument; a
 * template's addTemplateDocument, …): one set of resolvers, registered for each owner.
 */
export function documentMutations(owner: GraphqlOwner, descriptions: { add: string; update: string; delete: string }) {
  builder.mutationFields((t) => ({
    [ownerMutationName(owner, 'add', 'Document')]: t.field({
      type: DocumentType,
      nullable: true,
      description: descriptions.add,
      args: { ...ownerIdArg(owner, t.arg.id({ required: true })), input: t.arg({ type: AddDocumentInput, required: true }) },
      resolve: async (_root, args, context) => {
        const { file, ...fields } = args.input;
        const documentOwner = ownerOfArgs(owner, args);
        const { stream, filename } = await openUpload(file);
        const staged = await stageDocumentUpload(context, { owner: documentOwner, stream, filename, idempotencyKey: context.idempotencyKey }).catch((error) => {
          // Refused before or while reading: drop the rest of the file so the request can finish.
          stream.destroy();
          throw error;
        });
        return addDocument(context, {
          owner: documentOwner,
          upload: staged,
          fields: withoutNulls(fields, { opaque: JSON_VALUE_KEYS }),
          idempotencyKey: context.idempotencyKey,
        });
      },
    }),
    [ownerMutationName(owner, 'update', 'Document')]: t.field({
      type: DocumentType,
      nullable: true,
      description: descriptions.update,
      args: {
        ...ownerIdArg(owner, t.arg.id({ required: true })),
        documentId: t.arg.id({ required: true }),
        input: t.arg({ type: UpdateDocumentInput, required: true }),
      },
      resolve: (_root, args, context) =>
        updateDocument(context, {
          owner: ownerOfArgs(owner, args),
          documentId: String(args.documentId),
          input: withoutNulls(args.input, { opaque: JSON_VALUE_KEYS }),
        }),
    }),
    [ownerMutationName(owner, 'delete', 'Document')]: t.field({
      type: DeletedPayload,
      nullable: true,
      description: descriptions.delete,
      args: { ...ownerIdArg(owner, t.arg.id({ required: true })), documentId: t.arg.id({ required: true }) },
      resolve: async (_root, args, context) => {
        await deleteDocument(context, { owner: ownerOfArgs(owner, args), documentId: String(args.documentId) });
        return { id: String(args.documentId) };
      },
    }),
  }));
}

documentMutations(GRAPHQL_OWNERS.envelope, {
  add: 'Uploads a PDF to a draft envelope (REST: POST /envelopes/{id}/documents). Honours the Idempotency-Key header. On a sent envelope it is a correction (moves revision, records envelope.corrected), allowed only while nobody has acted: Envelope.AlreadySigned afterwards.',
  update:
    'Renames or reorders a document of a draft (REST: PATCH /envelopes/{id}/documents/{documentId}). On a sent envelope it is a correction (moves revision, records envelope.corrected), allowed only while nobody has acted: Envelope.AlreadySigned afterwards.',
  delete:
    'Removes a document of a draft, and fields left without a placement (REST: DELETE .../documents/{documentId}). On a sent envelope it is a correction (moves revision, records envelope.corrected), allowed only while nobody has acted: Envelope.AlreadySigned afterwards.',
});

builder.queryField('document', (t) =>
  t.field({
    type: DocumentType,
    args: { envelopeId: t.arg.id({ required: true }), documentId: t.arg.id({ required: true }) },
    resolve: (_root, args, context) => readDocument(context, { owner: { kind: 'envelope', id: String(args.envelopeId) }, documentId: String(args.documentId) }),
  }),
);
