import SchemaBuilder from '@pothos/core';
import type { Upload } from 'graphql-upload-minimal';
import type { RequestContext } from '../context.ts';

/**
 * The Pothos builder: context type and scalars only. Types, queries and mutations live in
 * `types/<feature>.ts`, each next to the object type it returns.
 */
export const builder = new SchemaBuilder<{
  Context: RequestContext;
  DefaultFieldNullability: false;
  DefaultInputFieldRequiredness: true;
  Scalars: {
    DateTime: { Input: Date; Output: Date | string };
    JSONObject: { Input: Record<string, unknown>; Output: Record<string, unknown> };
    Upload: { Input: Upload; Output: never };
  };
}>({
  defaultFieldNullability: false,
  defaultInputFieldRequiredness: true,
});

builder.queryType({ description: 'Reads. Every field needs the team key in X-Service-Api-Key unless noted.' });
builder.mutationType({ description: 'Writes. Each mirrors one REST operation of /api/v1/key and follows the same rules.' });
builder.subscriptionType({
  description:
    'Live events, over SSE (GraphQL over SSE, distinct connections) and WebSocket (graphql-ws) on /graphql. Every field needs the team key: the X-Service-Api-Key header over SSE, connectionParams { "X-Service-Api-Key": ... } over WebSocket.',
});
