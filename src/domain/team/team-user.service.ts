import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { auditChange, inTransaction } from '../change.ts';
import { answerOf, runIdempotently } from '../idempotency/idempotency.service.ts';
import { agentInfoSchema } from '../person/person.ts';
import { findDraftReferences, isReferenced } from '../person/references.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { Team } from './team.entity.ts';
import { TeamUser } from './team-user.entity.ts';
import { UserDuplicateEmailError, UserInUseError } from './team-user.errors.ts';
import { readUser, type TeamUserData } from './team-user.read.ts';
import { findTeamUser } from './team-users.ts';

export const DEFAULT_USER_LOCALE = 'en-US';

const userEmail = z.email('must be an email address').max(320, 'must be at most 320 characters');

export const createUserInput = z.strictObject({
  name: agentInfoSchema.shape.name,
  email: userEmail,
  phone: agentInfoSchema.shape.phone,
  locale: agentInfoSchema.shape.locale,
});

export const updateUserInput = z.strictObject({
  name: agentInfoSchema.shape.name.optional(),
  email: userEmail.optional(),
  phone: agentInfoSchema.shape.phone,
  // null puts the user back on the default locale.
  locale: agentInfoSchema.shape.locale,
});

export type CreateUserInput = z.input<typeof createUserInput>;
export type UpdateUserInput = z.input<typeof updateUserInput>;

const userKeys = ['name', 'email', 'phone', 'locale'] as const;

/**
 * Invariant guarded here: no two users of a team share an email address, ignoring letter case.
 * The unique index only knows exact spelling, so the check runs under a transaction-scoped
 * advisory lock per team: two requests claiming `Ada@x.com` and `ada@x.com` at once are
 * serialised, and the second sees the first.
 */
async function ensureEmailFree(em: EntityManager, teamId: string, email: string, exceptUserId?: string): Promise<void> {
  await em.execute('select pg_advisory_xact_lock(hashtextextended(?, 0))', [`team_user_email:${teamId}`], 'run');
  const [taken] = await em.execute<{ id: string }[]>('select id from team_user where team_id = ? and lower(email) = lower(?) and id <> ? limit 1', [
    teamId,
    email,
    exceptUserId ?? '00000000-0000-0000-0000-000000000000',
  ]);
  if (taken) throw new UserDuplicateEmailError(email);
}

/** The index still backs the rule if anything writes past the service; report it under the same name. */
async function withDuplicateEmailAsDomainError<T>(email: string | undefined, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof UniqueConstraintViolationException && email !== undefined) throw new UserDuplicateEmailError(email);
    throw error;
  }
}

/** Adds a user to the caller's team; the email must be new to the team. Idempotent per `Idempotency-Key`. */
export async function createUser(context: ServiceContext, options: { input: unknown; idempotencyKey?: string }): Promise<TeamUserData> {
  const input = parseInput(createUserInput, options.input);
  const caller = await context.caller();
  const outcome = await withDuplicateEmailAsDomainError(input.email, () =>
    context.em.transactional((em) =>
      runIdempotently(
        em,
        { teamId: caller.teamId, key: options.idempotencyKey, fingerprintOf: { operation: 'createUser', input: options.input } },
        {
          perform: async () => {
            await ensureEmailFree(em, caller.teamId, input.email);
            const now = context.clock.now();
            const user = em.create(TeamUser, {
              team: em.getReference(Team, caller.teamId),
              name: input.name,
              email: input.email,
              phone: input.phone ?? null,
              locale: input.locale ?? DEFAULT_USER_LOCALE,
              createdAt: now,
              updatedAt: now,
            });
            await em.persist(user).flush();
            await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'user.created', details: { userId: user.id, name: user.name } });
            return user.id;
          },
          answer: (userId) => readUser(inTransaction(context, em), userId),
        },
      ),
    ),
  );
  return answerOf(outcome, (userId) => readUser(context, userId));
}

/** Changes a user; only the given keys change. A new email must still be unique in the team. */
export async function updateUser(context: ServiceContext, options: { userId: string; input: unknown }): Promise<TeamUserData> {
  const input = parseInput(updateUserInput, options.input);
  const caller = await context.caller();
  const userId = await withDuplicateEmailAsDomainError(input.email, () =>
    context.em.transactional(async (em) => {
      const user = await findTeamUser(em, caller.teamId, options.userId, { lock: true });
      if (input.email !== undefined) await ensureEmailFree(em, caller.teamId, input.email, user.id);
      const changed = userKeys.filter((key) => input[key] !== undefined);
      const now = context.clock.now();
      em.assign(user, {
        ...(input.name !== undefined ? { name: input.name } : {}),
        ...(input.email !== undefined ? { email: input.email } : {}),
        ...(input.phone !== undefined ? { phone: input.phone } : {}),
        ...(input.locale !== undefined ? { locale: input.locale ?? DEFAULT_USER_LOCALE } : {}),
        updatedAt: now,
      });
      await auditChange(context, { em, caller, now }, { envelopeId: null, type: 'user.updated', details: { userId: user.id, changed } });
      return user.id;
    }),
  );
  return readUser(context, userId);
}

/**
 * Removes a user from the team. Refused with `User.InUse` while an agent of a draft envelope or a
 * template recipient names the user (the foreign key would silently leave those roles empty).
 */
export async function deleteUser(context: ServiceContext, options: { userId: string }): Promise<void> {
  const caller = await context.caller();
  await context.em.transactional(async (em) => {
    const user = await findTeamUser(em, caller.teamId, options.userId, { lock: true });
    const usage = await findDraftReferences(em, caller.teamId, { agentColumn: 'user_id', templateColumn: 'user_id', id: user.id });
    if (isReferenced(usage)) throw new UserInUseError(user.id, usage);
    await auditChange(
      context,
      { em, caller, now: context.clock.now() },
      {
        envelopeId: null,
        type: 'user.removed',
        details: { userId: user.id, name: user.name },
      },
    );
    await em.nativeDelete(TeamUser, { id: user.id, team: caller.teamId });
  });
}
