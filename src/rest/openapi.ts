import { z } from 'zod';
import { REST_VERSION } from '../http/contract-body.ts';
import { httpStatusForError } from '../shared/errors.ts';
import type { RestRoute, RouteDoc } from './router.ts';

/*
 * The OpenAPI 3.1 document of the REST layer, built from the route table: every route's method
 * and path, its `doc` (rest/router.ts) and the domain's own zod schemas for request bodies
 * (converted with zod's JSON Schema output). Errors are listed per route: those its `doc` names
 * and those every route of its kind can answer, each under the status the one status table
 * (shared/errors.ts) gives it.
 */

export type OpenApiDocument = Record<string, unknown> & { paths: Record<string, Record<string, unknown>> };

/** The resource a path parameter names, and so the `*.NotFound` a route answers for it. */
const RESOURCE_OF_PARAMETER: Record<string, string> = {
  envelopeId: 'Envelope',
  documentId: 'Document',
  recipientId: 'Recipient',
  fieldId: 'Field',
  contactId: 'Contact',
  groupId: 'ContactGroup',
  userId: 'User',
  templateId: 'Template',
  webhookId: 'Webhook',
  deliveryId: 'WebhookDelivery',
};

function pathParameters(path: string): string[] {
  return path
    .split('/')
    .filter((segment) => segment.startsWith(':'))
    .map((segment) => segment.slice(1));
}

/** Every error name a route can answer: its own, its path's NotFound, and those of its kind. */
export function errorsOfRoute(route: RestRoute): string[] {
  const names = new Set<string>(['Request.RateLimited', 'Server.Unavailable']);
  if (!route.doc.isPublic) {
    names.add('Auth.MissingApiKey');
    names.add('Auth.InvalidApiKey');
  }
  const parameters = pathParameters(route.path);
  for (const parameter of parameters) if (RESOURCE_OF_PARAMETER[parameter]) names.add(`${RESOURCE_OF_PARAMETER[parameter]}.NotFound`);
  if (route.doc.body || route.doc.multipart || route.doc.query?.length) names.add('Request.Invalid');
  if (route.doc.body) {
    names.add('Request.PayloadTooLarge');
    names.add('Request.Timeout');
  }
  if (route.doc.isIdempotent) names.add('Request.IdempotencyKeyReused');
  for (const name of route.doc.errors ?? []) names.add(name);
  return [...names].sort();
}

function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  // `input`: what a caller sends (defaults optional); refinements and custom checks the JSON Schema
  // cannot express are still enforced by the service and reported as Request.Invalid.
  const converted = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete converted.$schema;
  return converted;
}

function requestBodyOf(doc: RouteDoc): Record<string, unknown> | undefined {
  const content: Record<string, unknown> = {};
  if (doc.body) {
    const inner = jsonSchemaOf(doc.body.schema);
    const schema = doc.body.wrap ? { type: 'object', properties: { [doc.body.wrap]: inner }, required: [doc.body.wrap], additionalProperties: false } : inner;
    content['application/json'] = { schema, example: doc.body.example };
  }
  if (doc.multipart) {
    const fields = jsonSchemaOf(doc.multipart.fields) as { properties?: Record<string, unknown> };
    content['multipart/form-data'] = {
      schema: {
        type: 'object',
        properties: { [doc.multipart.filePart]: { type: 'string', format: 'binary', description: doc.multipart.fileDescription ?? 'The PDF, at most 48 MB.' }, ...(fields.properties ?? {}) },
        required: [doc.multipart.filePart],
      },
    };
  }
  if (Object.keys(content).length === 0) return undefined;
  return { required: doc.body && !doc.multipart ? (doc.body.required ?? true) : true, content };
}

function operationId(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((segment) => (segment.startsWith(':') ? `by-${segment.slice(1)}` : segment))
    .join('-')
    .split(/[-_]/)
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((word) => word[0].toUpperCase() + word.slice(1))].join('');
}

const timestamp = (description?: string) => ({ type: ['string', 'null'], format: 'date-time', ...(description ? { description } : {}) });

/** An envelope as `GET /envelopes/{id}` (and the listing, and a change) answers it, without its nested lists. */
const ENVELOPE_SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    status: { type: 'string', enum: ['draft', 'scheduled', 'sent', 'finalized', 'voided', 'expired'] },
    expirationPeriodDays: { type: 'integer' },
    reminderInitialDelayDays: { type: 'integer' },
    reminderRepeatIntervalDays: { type: 'integer' },
    reminderBeforeExpirationDays: { type: 'integer' },
    context: { type: 'object' },
    stamp: { type: ['boolean', 'null'] },
    createdAt: { type: 'string', format: 'date-time' },
    updatedAt: { type: 'string', format: 'date-time' },
    sendAt: timestamp('A scheduled envelope’s send time (null unless scheduled).'),
    sentAt: timestamp(),
    revision: {
      type: 'integer',
      minimum: 0,
      description:
        '0 at send, one more for every correction of the sent envelope (`envelope.corrected`). The signing page submits the revision it loaded; an older one is `Signing.EnvelopeChanged`.',
    },
    expiresAt: timestamp(),
    completedAt: timestamp(),
    voidedAt: timestamp(),
    templateId: { type: ['string', 'null'], format: 'uuid' },
  },
  required: ['id', 'name', 'status', 'revision'],
};

function responsesOf(route: RestRoute, errorNames: string[]): Record<string, unknown> {
  const responses: Record<string, unknown> = {
    '200':
      route.doc.produces === 'application/pdf' || route.doc.produces === 'application/zip'
        ? { description: 'The file, streamed, as an attachment.', content: { [route.doc.produces]: { schema: { type: 'string', format: 'binary' } } } }
        : route.doc.produces === 'signer-file'
          ? {
              description: 'The file as uploaded, streamed, as an attachment (`Content-Disposition` names it); `Content-Type` is the type judged from its bytes.',
              content: Object.fromEntries(['application/pdf', 'image/png', 'image/jpeg'].map((type) => [type, { schema: { type: 'string', format: 'binary' } }])),
            }
          : route.doc.produces === 'text/html'
            ? { description: 'The page.', content: { 'text/html': { schema: { type: 'string' } } } }
            : route.doc.produces === 'application/json'
              ? { description: 'The document itself, not wrapped.', content: { 'application/json': { schema: { type: 'object' } } } }
              : {
                  description: 'Success: `{ version, success: true, payload }`.',
                  content: {
                    'application/json': {
                      schema: route.doc.payload
                        ? { allOf: [{ $ref: '#/components/schemas/Success' }, { type: 'object', properties: { payload: route.doc.payload } }] }
                        : { $ref: '#/components/schemas/Success' },
                    },
                  },
                },
  };
  // DOWNLOAD_REDIRECT: a stored sealed PDF is served by the object store itself.
  if (route.doc.produces === 'application/pdf' && errorNames.includes('Storage.ObjectMissing')) {
    responses['302'] = {
      description: 'With DOWNLOAD_REDIRECT=true, a sealed PDF: `Location` is a presigned object-store URL, valid 60 seconds, that serves the same bytes with the same file name and type.',
      headers: { Location: { schema: { type: 'string', format: 'uri' } } },
    };
  }
  const byStatus = new Map<number, string[]>();
  for (const name of errorNames) {
    const status = httpStatusForError(name);
    byStatus.set(status, [...(byStatus.get(status) ?? []), name]);
  }
  for (const [status, names] of [...byStatus.entries()].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: names.map((name) => `\`${name}\``).join(', '),
      content: {
        'application/json': {
          schema: {
            allOf: [{ $ref: '#/components/schemas/Error' }, { type: 'object', properties: { error: { type: 'object', properties: { name: { type: 'string', enum: names } } } } }],
          },
        },
      },
    };
  }
  return responses;
}

/** The whole document for a route table, served at `serverUrl` (the REST prefix under PUBLIC_URL). */
export function buildOpenApiDocument(routes: RestRoute[], { serverUrl }: { serverUrl: string }): OpenApiDocument {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const openApiPath = route.path.replace(/:(\w+)/g, '{$1}');
    const errorNames = errorsOfRoute(route);
    const parameters: Record<string, unknown>[] = [
      ...pathParameters(route.path).map((name) => ({ name, in: 'path', required: true, schema: RESOURCE_OF_PARAMETER[name] ? { type: 'string', format: 'uuid' } : { type: 'string' } })),
      ...(route.doc.query ?? []).map((parameter) => ({ name: parameter.name, in: 'query', required: false, description: parameter.description, schema: parameter.schema })),
    ];
    if (route.doc.isIdempotent) parameters.push({ $ref: '#/components/parameters/IdempotencyKey' });
    const operation: Record<string, unknown> = {
      operationId: operationId(route.method, route.path),
      summary: route.doc.summary,
      tags: [route.path.split('/')[1]],
      parameters,
      responses: responsesOf(route, errorNames),
      'x-error-names': errorNames,
    };
    if (route.doc.description) operation.description = route.doc.description;
    if (route.doc.isPublic) operation.security = [];
    const requestBody = requestBodyOf(route.doc);
    if (requestBody) operation.requestBody = requestBody;
    paths[openApiPath] = { ...paths[openApiPath], [route.method.toLowerCase()]: operation };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Envelope service REST API',
      version: REST_VERSION,
      description:
        'The REST compatibility layer: every answer is `{ version, success, payload }` or `{ version, success: false, error: { name, description, context } }`. ' +
        'Authenticate with your team’s key in `X-Service-Api-Key`. The same operations, and the recipient side, are on GraphQL at `/graphql`.',
    },
    servers: [{ url: serverUrl }],
    security: [{ apiKey: [] }],
    paths,
    components: {
      securitySchemes: { apiKey: { type: 'apiKey', in: 'header', name: 'X-Service-Api-Key' } },
      parameters: {
        IdempotencyKey: {
          name: 'Idempotency-Key',
          in: 'header',
          required: false,
          description: 'Repeat a creation safely: the same key and body answer the first response again; the same key with another body is `Request.IdempotencyKeyReused`.',
          schema: { type: 'string', maxLength: 200 },
        },
      },
      schemas: {
        Envelope: ENVELOPE_SCHEMA,
        Success: {
          type: 'object',
          properties: { version: { const: REST_VERSION }, success: { const: true }, payload: { type: 'object' } },
          required: ['version', 'success', 'payload'],
        },
        Error: {
          type: 'object',
          properties: {
            version: { const: REST_VERSION },
            success: { const: false },
            error: {
              type: 'object',
              properties: {
                name: { type: 'string', description: 'Stable, `Resource.Reason`.' },
                description: { type: 'string' },
                context: { type: 'object', description: 'Details: `issues` for Request.Invalid, `requestId` always.' },
              },
              required: ['name', 'description', 'context'],
            },
          },
          required: ['version', 'success', 'error'],
        },
      },
    },
  };
}
