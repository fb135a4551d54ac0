import { z } from 'zod';
import { isFrameOrigin } from '../../shared/web-origin.ts';
import { auditChange } from '../change.ts';
import { runRead } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { parseInput } from '../validation.ts';
import { TeamNotFoundError } from './team.errors.ts';

/*
 * A team's settings (issue 21, growing with later issues: display name, reply-to, notifications,
 * branding): one JSON document per team, on the team's row, validated as a whole by one schema
 * and changed by one audited PATCH. A change names the sections it changes; within a section the
 * keys given replace the stored ones and the others stay, so a later section is added to the schema
 * without touching what is stored. `version` counts changes; the write is a guarded update on it,
 * taken under the team row's lock.
 */

export const MAX_FRAME_ORIGINS = 20;

const frameOrigin = z
  .string()
  .max(300)
  .refine(isFrameOrigin, 'must be an origin: https://host[:port], or http://localhost[:port] for development (no path, no wildcard)')
  .transform((origin) => origin.toLowerCase());

/** Each section as stored and answered; `null` means "not set" (the service's default applies). */
const embeddingSection = z.strictObject({
  /**
   * Origins whose pages may frame this team's signing URLs. Null: SIGNING_FRAME_ANCESTORS decides.
   * An empty list: no origin may (signing URLs are then only opened on their own).
   */
  frameOrigins: z.array(frameOrigin).max(MAX_FRAME_ORIGINS, `at most ${MAX_FRAME_ORIGINS} origins`).nullable(),
});

/** The document as a PATCH gives it: any section, any of its keys. */
export const teamSettingsPatch = z.strictObject({
  embedding: embeddingSection.partial().optional(),
});

/** The whole document, every key present (null when not set). */
export type TeamSettingsData = {
  embedding: { frameOrigins: string[] | null };
  /** How many times the settings were changed (0: never). */
  version: number;
};

const DEFAULTS: Omit<TeamSettingsData, 'version'> = { embedding: { frameOrigins: null } };

/** The stored document over the defaults (a stored key not in the schema any more is left out). */
function complete(stored: unknown, version: number): TeamSettingsData {
  const document = (stored && typeof stored === 'object' ? stored : {}) as Record<string, Record<string, unknown> | undefined>;
  const frameOrigins = document.embedding?.frameOrigins;
  return {
    embedding: { frameOrigins: Array.isArray(frameOrigins) ? frameOrigins.map(String) : DEFAULTS.embedding.frameOrigins },
    version,
  };
}

async function readRow(context: ServiceContext, teamId: string): Promise<{ settings: unknown; version: number }> {
  const [row] = await runRead<{ settings: unknown; version: number }>(
    context.reader,
    'team-settings',
    (db, slot) => db.selectFrom('team as t').select((eb) => [eb.ref('t.settings').as('settings'), eb.ref('t.settings_version').as('version')]).where('t.id', '=', slot(0)),
    [teamId],
  );
  if (!row) throw new TeamNotFoundError(teamId);
  return row;
}

/** The calling team's settings (REST `GET /team/settings`, GraphQL `teamSettings`). */
export async function readTeamSettings(context: ServiceContext): Promise<TeamSettingsData> {
  const caller = await context.caller();
  const row = await readRow(context, caller.teamId);
  return complete(row.settings, row.version);
}

/** The settings of a team the caller already stands for (the signing URL's frame-origin check). */
export async function teamSettingsOf(context: ServiceContext, teamId: string): Promise<TeamSettingsData> {
  const row = await readRow(context, teamId);
  return complete(row.settings, row.version);
}

/**
 * Changes the calling team's settings: the sections and keys given replace the stored ones, the
 * whole result is valid or nothing changes (`Request.Invalid` with every problem), and the change
 * is recorded as `team.settings_updated` (the keys given, old and new) on the team's trail.
 */
export async function updateTeamSettings(context: ServiceContext, options: { input: unknown }): Promise<TeamSettingsData> {
  const patch = parseInput(teamSettingsPatch, options.input);
  const caller = await context.caller();
  return context.em.transactional(async (em) => {
    const [row] = await em.execute<{ settings: Record<string, Record<string, unknown>>; settings_version: number }[]>(
      'select settings, settings_version from team where id = ? for update',
      [caller.teamId],
    );
    if (!row) throw new TeamNotFoundError(caller.teamId);
    const before = complete(row.settings, row.settings_version);
    const stored: Record<string, Record<string, unknown>> = { ...(row.settings ?? {}) };
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [section, keys] of Object.entries(patch) as [keyof typeof patch, Record<string, unknown> | undefined][]) {
      if (!keys) continue;
      stored[section] = { ...(stored[section] ?? {}), ...keys };
      for (const [key, value] of Object.entries(keys)) {
        changes[`${section}.${key}`] = { from: (before[section] as Record<string, unknown>)[key], to: value };
      }
    }
    const version = row.settings_version + 1;
    // Guarded by the version read under the lock: a writer that did not take the lock cannot interleave.
    const [updated] = await em.execute<{ id: string }[]>(
      'update team set settings = ?, settings_version = ? where id = ? and settings_version = ? returning id',
      [JSON.stringify(stored), version, caller.teamId, row.settings_version],
    );
    if (!updated) throw new TeamNotFoundError(caller.teamId);
    await auditChange(context, { em, caller, now: context.clock.now() }, { envelopeId: null, type: 'team.settings_updated', details: { changes, version } });
    return complete(stored, version);
  });
}
