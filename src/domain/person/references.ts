/**
 * Where a person held in the team's address book (a contact, a contact group, a team user) is
 * still named. In person/ because both holders ask it before a delete (contact.service.ts,
 * team-user.service.ts), and neither imports the other.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { teamEnvelopes } from '../envelope/team-envelope.ts';
import { readerOf } from '../read-model.ts';

/** Where a contact, group or user is still named: draft envelopes (by id) and templates (by id). */
export type ReferenceUsage = { envelopeIds: string[]; templateIds: string[] };

const MAX_REPORTED_USAGES = 100;

/**
 * Where a contact, group or user is still named by something that has not copied the person yet:
 * agents of the team's draft envelopes and recipients of the team's templates. Agents of sent
 * envelopes carry their own snapshot, so they do not hold a delete back.
 *
 * The caller must hold a write lock on the referenced row: a concurrent insert of an agent naming
 * it takes a key-share lock on that row, so after the lock is granted every such agent is
 * committed and visible here (or its insert waits for the delete and then fails).
 */
export async function findDraftReferences(
  em: EntityManager,
  teamId: string,
  reference: { agentColumn: 'contact_id' | 'group_id' | 'user_id'; templateColumn: 'contact_id' | 'contact_group_id' | 'user_id'; id: string },
): Promise<ReferenceUsage> {
  // The team's drafts through the envelope gate, on this transaction (readerOf), after the lock.
  const envelopes = await teamEnvelopes(readerOf(em), teamId)
    .innerJoin('recipient as r', 'r.envelope_id', 'e.id')
    .innerJoin('agent as a', 'a.recipient_id', 'r.id')
    .where(`a.${reference.agentColumn}`, '=', reference.id)
    .where('e.status', '=', 'draft')
    .select('e.id')
    .distinct()
    .orderBy('e.id')
    .limit(MAX_REPORTED_USAGES)
    .execute();
  const templates = await em.execute<{ id: string }[]>(
    `select distinct tr.template_id as id
       from template_recipient tr
       join template t on t.id = tr.template_id
      where tr.${reference.templateColumn} = ? and t.team_id = ?
      order by 1
      limit ${MAX_REPORTED_USAGES}`,
    [reference.id, teamId],
  );
  return { envelopeIds: envelopes.map((row) => row.id), templateIds: templates.map((row) => row.id) };
}

export function isReferenced(usage: ReferenceUsage): boolean {
  return usage.envelopeIds.length > 0 || usage.templateIds.length > 0;
}
