/**
 * Who an audit event's actor is, by name: an API key by its label (its prefix when it has none),
 * a recipient's agent by the person's name, the system by nothing (the faces say "the service").
 *
 * Events of a page, of several envelopes, or of a GraphQL selection name the same few actors
 * many times: a per-request DataLoader collects every actor asked for while one round of
 * resolvers runs and names them all in ONE statement, each at most once. Only the caller's team's
 * keys and agents are named; any other id (another team's, a deleted row) reads as no name.
 */
import DataLoader from 'dataloader';
import { sql } from 'kysely';
import { isUuid } from '../../shared/ids.ts';
import type { ReadDb } from '../read-model.ts';
import { teamAgentNames } from '../recipient/agent-people.ts';
import type { ServiceContext } from '../service-context.ts';

export type ActorReference = { type: 'api_key' | 'agent' | 'system'; id: string | null };

type NameLoader = DataLoader<string, string | null>;

/** One loader per request context (a context object lives for one request). */
const loaders = new WeakMap<object, NameLoader>();

function keyOf(actor: ActorReference): string | null {
  return actor.type === 'system' || actor.id === null || !isUuid(actor.id) ? null : `${actor.type}:${actor.id.toLowerCase()}`;
}

async function nameAll(reader: ReadDb, teamId: string, keys: readonly string[]): Promise<(string | null)[]> {
  const idsOf = (type: string) => keys.filter((key) => key.startsWith(`${type}:`)).map((key) => key.slice(type.length + 1));
  const keyIds = idsOf('api_key');
  const agentIds = idsOf('agent');
  // Each branch filters by the caller's team; an empty id list matches nothing (= any('{}')).
  const rows = await reader
    .selectFrom('api_key as k')
    .select((eb) => [eb.val('api_key').as('type'), 'k.id', sql<string | null>`coalesce(k.label, k.prefix)`.as('name')])
    .where('k.team_id', '=', teamId)
    .where('k.id', '=', (eb) => eb.fn.any(eb.val(keyIds)))
    // The team's agents, through the envelope gate (recipient/agent-people.ts).
    .unionAll(teamAgentNames(reader, teamId, agentIds))
    .execute();
  const names = new Map(rows.map((row) => [`${row.type}:${row.id}`, (row.name as string | null) ?? null]));
  return keys.map((key) => names.get(key) ?? null);
}

function loaderOf(context: Pick<ServiceContext, 'reader' | 'caller'>): NameLoader {
  let loader = loaders.get(context);
  if (!loader) {
    loader = new DataLoader<string, string | null>(async (keys) => nameAll(context.reader, (await context.caller()).teamId, keys));
    loaders.set(context, loader);
  }
  return loader;
}

/** The actor's name (null for the system, or an actor that is not the caller team's). */
export async function actorName(context: Pick<ServiceContext, 'reader' | 'caller'>, actor: ActorReference): Promise<string | null> {
  const key = keyOf(actor);
  return key === null ? null : loaderOf(context).load(key);
}

/** The events with each actor's name added (`actor.name`), every distinct actor named once. */
export async function withActorNames<Event extends { actor: ActorReference }>(
  context: Pick<ServiceContext, 'reader' | 'caller'>,
  events: Event[],
): Promise<(Event & { actor: ActorReference & { name: string | null } })[]> {
  const names = await Promise.all(events.map((event) => actorName(context, event.actor)));
  return events.map((event, index) => ({ ...event, actor: { ...event.actor, name: names[index] } }));
}
