import { type RawBuilder, sql } from 'kysely';
import { teamEnvelopes } from '../envelope/team-envelope.ts';
import type { ReadDb } from '../read-model.ts';
import type { AgentInfo } from './agent.entity.ts';

/*
 * "Who an agent stands for", in one place. Once sent, an agent stands for its send-time
 * `snapshot` (a contact's or user's details then, a group's members then): later edits of a
 * contact never change who signs. Before a snapshot names anyone (a draft, or a snapshot taken
 * of nobody), it stands for its inline `info`, or for nobody. The workflow, the signing page's
 * read, the certificate and the audit trail's actor names all take people from here: `peopleOf`
 * for a loaded row, `agentPersonSql` inside a statement, with the same precedence.
 */

/** The people an agent stands for, in order (a group agent is several people). */
export function peopleOf<Person = AgentInfo>(agent: { snapshot?: Person[] | null; info?: Person | null }): Person[] {
  return agent.snapshot && agent.snapshot.length > 0 ? agent.snapshot : agent.info ? [agent.info] : [];
}

const SQL_NAME = /^[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?$/;

/**
 * In SQL text, `peopleOf(alias)[personIndex]` as jsonb (SQL null, or JSON null, when there is no
 * such person): `alias` is the agent row's alias, `personIndex` a whole number or an integer SQL
 * expression (`t.person_index`). Both are written in code, never taken from input.
 */
export function agentPersonSqlText(alias: string, personIndex: number | string): string {
  const index = typeof personIndex === 'number' ? String(Math.trunc(personIndex)) : personIndex;
  if (!SQL_NAME.test(alias)) throw new Error(`agentPersonSqlText: not an alias: ${alias}`);
  return `(coalesce(nullif(${alias}.snapshot, '[]'::jsonb), jsonb_build_array(${alias}.info)) -> ${index})`;
}

/** `agentPersonSqlText` for a Kysely statement. */
export function agentPersonSql(alias: string, personIndex: number | string): RawBuilder<unknown> {
  return sql.raw(agentPersonSqlText(alias, personIndex));
}

/**
 * The name each of `agentIds` stands for, as rows `{ type: 'agent', id, name }`, for the agents of
 * the team's envelopes only (through the envelope gate; any other id gives no row). A group
 * agent's name is its first person's (the snapshot taken at sending). A select of its own, so the
 * audit trail's actor names join it to the API keys' in one statement (audit/actor-names.ts).
 */
export function teamAgentNames(reader: ReadDb, teamId: string, agentIds: readonly string[]) {
  return teamEnvelopes(reader, teamId)
    .innerJoin('recipient as r', 'r.envelope_id', 'e.id')
    .innerJoin('agent as a', 'a.recipient_id', 'r.id')
    .select((inner) => [inner.val('agent').as('type'), 'a.id', sql<string | null>`${agentPersonSql('a', 0)} ->> 'name'`.as('name')])
    .where('a.id', '=', (inner) => inner.fn.any(inner.val(agentIds)));
}
