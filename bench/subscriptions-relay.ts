/**
 * The bare relay the subscription benchmark compares against: graphql-yoga + Pothos with yoga's
 * typed `createPubSub`, the same event type and SSE transport, nothing else (no database, no
 * auth). `POST /publish?envelopeId=…` publishes one status change. Prints its address as JSON.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import SchemaBuilder from '@pothos/core';
import { createPubSub, createYoga } from 'graphql-yoga';

type Event = { envelopeId: string; sequence: number; type: string; status: string | null; at: string };
const pubsub = createPubSub<{ status: [envelopeId: string, event: Event] }>();
const builder = new SchemaBuilder<{ DefaultFieldNullability: false }>({ defaultFieldNullability: false });
const EventType = builder.objectRef<Event>('EnvelopeEvent').implement({
  fields: (t) => ({
    envelopeId: t.id({ resolve: (event) => event.envelopeId }),
    sequence: t.exposeInt('sequence'),
    type: t.exposeString('type'),
    status: t.string({ nullable: true, resolve: (event) => event.status }),
    at: t.exposeString('at'),
  }),
});
builder.queryType({ fields: (t) => ({ ok: t.boolean({ resolve: () => true }) }) });
builder.subscriptionType({
  fields: (t) => ({
    envelopeStatusChanged: t.field({
      type: EventType,
      args: { envelopeId: t.arg.id({ required: true }) },
      subscribe: (_root, args) => pubsub.subscribe('status', String(args.envelopeId)),
      resolve: (event: Event) => event,
    }),
  }),
});
const yoga = createYoga({ schema: builder.toSchema(), graphqlEndpoint: '/graphql', landingPage: false, graphiql: false, logging: false });
let sequence = 0;
const server = http.createServer((request, response) => {
  if (request.url?.startsWith('/publish')) {
    const envelopeId = new URL(request.url, 'http://relay').searchParams.get('envelopeId') ?? '';
    sequence += 1;
    pubsub.publish('status', envelopeId, { envelopeId, sequence, type: 'envelope.deleted', status: null, at: new Date().toISOString() });
    response.end('ok');
    return;
  }
  void yoga(request, response);
});
server.listen(0, '127.0.0.1', () => {
  console.log(JSON.stringify({ address: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }));
});
