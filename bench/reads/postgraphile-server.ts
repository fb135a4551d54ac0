/**
 * The PostGraphile 5 peer, run as its own process by bench/reads.ts: the Amber preset over the
 * same database, served by grafserv's node:http adapter at /graphql. Production-like settings:
 * no GraphiQL, no schema watching, no explain; the default pg pool (10 connections, as ours).
 * PostGraphile has no notion of our API keys, so it answers every caller; the tenant filter is
 * the query's `condition: { teamId }`.
 *
 *   DATABASE_URL=postgres://... PORT=4321 node bench/reads/postgraphile-server.ts
 */
import http from 'node:http';
import { postgraphile } from 'postgraphile';
import { makePgService } from 'postgraphile/adaptors/pg';
import { grafserv } from 'postgraphile/grafserv/node';
import { PostGraphileAmberPreset } from 'postgraphile/presets/amber';

const connectionString = process.env.DATABASE_URL;
const port = Number(process.env.PORT);
if (!connectionString || !port) {
  console.error('DATABASE_URL and PORT are required');
  process.exit(1);
}

const preset: GraphileConfig.Preset = {
  extends: [PostGraphileAmberPreset],
  pgServices: [makePgService({ connectionString, schemas: ['public'] })],
  grafserv: { graphqlPath: '/graphql', graphiql: false, watch: false, websockets: false },
  grafast: { explain: false },
};

const pgl = postgraphile(preset);
const serv = pgl.createServ(grafserv);
// Build the schema (introspection) before listening, so no request pays for it.
await pgl.getSchema();
const server = http.createServer();
await serv.addTo(server, false);
server.listen(port, '127.0.0.1');

async function shutdown() {
  server.close();
  server.closeAllConnections();
  await pgl.release(); // releases the grafserv instance too
  process.exit(0);
}
process.on('SIGTERM', () => void shutdown());
process.on('SIGINT', () => void shutdown());
