/**
 * Send a draft envelope and watch it by subscription (graphql-ws over WebSocket) until it closes:
 * every audit event is printed as it happens, and the script ends with the final status.
 *
 *   ENVELOPE_API_KEY=… node examples/send-and-watch.ts ENVELOPE_ID
 */
import { createClient } from 'graphql-ws';
import type { EnvelopeStatus, ExampleEnvelopeEventsSubscription } from './generated/graphql/graphql.ts';
import { graphql as gql } from './generated/graphql/index.ts';
import { apiKey, graphql, report, serviceUrl } from './shared.ts';

const Send = gql(`
  mutation ExampleSend($id: ID!) {
    sendEnvelope(id: $id) { id status sentAt expiresAt }
  }
`);

const Events = gql(`
  subscription ExampleEnvelopeEvents($envelopeId: ID!, $afterSequence: Int) {
    envelopeEvents(envelopeId: $envelopeId, afterSequence: $afterSequence) { envelopeId sequence type status at }
  }
`);

const CLOSED: EnvelopeStatus[] = ['finalized', 'voided', 'expired'];

const envelopeId = process.argv[2];
if (!envelopeId) {
  console.error('usage: node examples/send-and-watch.ts ENVELOPE_ID');
  process.exit(1);
}

// The key goes in connectionParams: a browser's WebSocket cannot set headers, so the service reads it there.
const client = createClient({ url: `${serviceUrl.replace(/^http/, 'ws')}/graphql`, connectionParams: { 'X-Service-Api-Key': apiKey() } });

// Subscribed from the start of the trail before sending: nothing between the send and the first
// live event can be missed, and a reconnect would resume after the last sequence seen.
let lastSequence = 0;
const events = client.iterate<ExampleEnvelopeEventsSubscription>({
  query: Events.toString(),
  variables: { envelopeId, afterSequence: lastSequence },
});

const { sendEnvelope } = await graphql(Send, { id: envelopeId });
report('sent', { envelopeId, status: sendEnvelope?.status, expiresAt: sendEnvelope?.expiresAt });

let finalStatus: EnvelopeStatus | null = null;
for await (const result of events) {
  const [error] = result.errors ?? [];
  if (error) throw new Error(`${String(error.extensions?.code)}: ${error.message}`);
  const event = result.data!.envelopeEvents;
  lastSequence = event.sequence;
  report('event', { sequence: event.sequence, type: event.type, status: event.status });
  if (event.status && CLOSED.includes(event.status)) {
    finalStatus = event.status;
    break;
  }
}
await client.dispose();
report('closed', { envelopeId, status: finalStatus, lastSequence });
