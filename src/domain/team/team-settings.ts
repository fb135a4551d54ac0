import { Readable } from 'node:stream';
import { sql } from 'kysely';
import { z } from 'zod';
import { isSha256 } from '../../shared/blob-store/index.ts';
import { encryptSecret } from '../../shared/encrypted-secret.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { isFrameOrigin } from '../../shared/web-origin.ts';
import { auditChange } from '../change.ts';
import { type Locale, locales } from '../person/person.ts';
import { runRead } from '../read-model.ts';
import type { ServiceContext } from '../service-context.ts';
import { boundedText, identifierSlug, parseInput } from '../validation.ts';
import { TeamNotFoundError } from './team.errors.ts';
import { inspectLogo, LOGO_MAX_BYTES, LOGO_MAX_PIXELS, type LogoImage, logoUrl, type StoredLogo } from './team-logo.ts';

/*
 * A team's settings (issue 21; display name, reply-to, notifications and branding from issue 24;
 * the artefacts' stamp default from issue 23):
 * one JSON document per team, on the team's row, validated as a whole by one schema
 * and changed by one audited PATCH. A change names the sections it changes; within a section the
 * keys given replace the stored ones and the others stay, so a later section is added to the schema
 * without touching what is stored. `version` counts changes; the write is a guarded update on it,
 * taken under the team row's lock.
 */

export const MAX_FRAME_ORIGINS = 20;
export const MAX_NOTIFICATION_EMAILS = 10;
export const MAX_FOOTER_CHARACTERS = 500;

/**
 * The events a team's notification addresses may get (issue 24). `bulk_send_completed` is queued
 * when a bulk send is marked completed (bulk-send.service.ts, recordCompletion).
 */
export const TEAM_NOTICE_EVENTS = ['completed', 'declined', 'voided', 'expired', 'delivery_failed', 'bulk_send_completed', 'send_failed'] as const;
export type TeamNoticeEvent = (typeof TEAM_NOTICE_EVENTS)[number];

const frameOrigin = z
  .string()
  .max(300)
  .refine(isFrameOrigin, 'must be an origin: https://host[:port], or http://localhost[:port] for development (no path, no wildcard)')
  .transform((origin) => origin.toLowerCase());

const emailAddress = z.email('must be an email address').max(320, 'must be at most 320 characters');

/** A logo as a PATCH gives it: the image's bytes in base64, checked by content here, stored by the service. */
const logoUpload = z.strictObject({
  data: z
    .string()
    // Base64 of LOGO_MAX_BYTES, with room for line breaks; the decoded size is checked below.
    .max(Math.ceil((LOGO_MAX_BYTES * 4) / 3) + 4096, `must be at most ${LOGO_MAX_BYTES / 1024} KiB of image`)
    .transform((data, check) => {
      const compact = data.replace(/\s+/g, '');
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
        check.addIssue({ code: 'custom', message: 'must be the image in base64' });
        return z.NEVER;
      }
      const bytes = Buffer.from(compact, 'base64');
      if (bytes.length > LOGO_MAX_BYTES) {
        check.addIssue({ code: 'custom', message: `must be at most ${LOGO_MAX_BYTES / 1024} KiB of image (it is ${Math.ceil(bytes.length / 1024)} KiB)` });
        return z.NEVER;
      }
      const image = inspectLogo(bytes);
      if (!image) {
        check.addIssue({ code: 'custom', message: 'must be a PNG or JPEG image (checked by its content)' });
        return z.NEVER;
      }
      if (image.width < 1 || image.height < 1 || image.width > LOGO_MAX_PIXELS || image.height > LOGO_MAX_PIXELS) {
        check.addIssue({ code: 'custom', message: `must be at most ${LOGO_MAX_PIXELS}×${LOGO_MAX_PIXELS} pixels (it is ${image.width}×${image.height})` });
        return z.NEVER;
      }
      return { bytes, image };
    }),
});

/** Each section as a PATCH gives it; `null` means "not set" (the service's default applies). */
const embeddingSection = z.strictObject({
  /**
   * Origins whose pages may frame this team's signing pages (signing URLs, named as `frameOrigin`
   * or not, and invitation links). Null: SIGNING_FRAME_ANCESTORS decides. An empty list: no origin
   * may (the pages are then only opened on their own). See teamFrameOrigins.
   */
  frameOrigins: z.array(frameOrigin).max(MAX_FRAME_ORIGINS, `at most ${MAX_FRAME_ORIGINS} origins`).nullable(),
});

const notificationsSection = z.strictObject({
  /** Where the team's notices go; null or empty: nowhere. */
  emails: z
    .array(emailAddress.transform((address) => address.toLowerCase()))
    .max(MAX_NOTIFICATION_EMAILS, `at most ${MAX_NOTIFICATION_EMAILS} addresses`)
    .refine((emails) => new Set(emails).size === emails.length, 'must not name an address twice')
    .nullable(),
  /** Which events they get; null: every event. */
  events: z
    .array(z.enum(TEAM_NOTICE_EVENTS, { error: `must be one of ${TEAM_NOTICE_EVENTS.join(', ')}` }))
    .refine((events) => new Set(events).size === events.length, 'must not name an event twice')
    .nullable(),
  /** The notices' language; null: en-US. */
  locale: z.enum(locales, { error: `must be one of ${locales.join(', ')}` }).nullable(),
});

const brandingSection = z.strictObject({
  logo: logoUpload.nullable(),
  /** The colour of buttons and the page's accents: `#rrggbb` (white text sits on it). */
  accentColor: z
    .string()
    .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour as #rrggbb')
    .transform((colour) => colour.toLowerCase())
    .nullable(),
  /** A line under every mail and on the signing page (plain text). */
  footer: boundedText(1, MAX_FOOTER_CHARACTERS).nullable(),
});

const artefactsSection = z.strictObject({
  /**
   * The default of new envelopes' `stamp` (issue 23): sealed pages carry the envelope id in their
   * margin and each signature a caption (signer, UTC date). Null: on.
   */
  stamp: z.boolean().nullable(),
});

export const MAX_TRUST_SERVICES = 10;
/** The key label of trust services' client secrets (shared/encrypted-secret.ts): encrypted as webhook secrets are, under their own key. */
export const TRUST_SERVICE_SECRET_LABEL = 'envelope-service trust service secrets v1';
export const TRUST_SERVICE_LEVELS = ['advanced', 'qualified'] as const;
export type TrustServiceLevel = (typeof TRUST_SERVICE_LEVELS)[number];

/**
 * A trust service provider speaking the CSC API v2 (issue 35), where the team's signers with an
 * advanced or qualified level sign. `clientSecret` is written, never read back: left out for an
 * `id` already stored, the stored one stays.
 */
const trustServiceInput = z.strictObject({
  id: identifierSlug,
  name: boundedText(1, 100),
  baseUrl: z
    .string()
    .max(500)
    .refine((value) => URL.canParse(value) && ['http:', 'https:'].includes(new URL(value).protocol), "must be an http(s) URL: the provider's CSC API base, e.g. https://tsp.example/csc/v2")
    .transform((value) => value.replace(/\/+$/, '')),
  clientId: boundedText(1, 200),
  clientSecret: boundedText(1, 500).optional(),
  levels: z
    .array(z.enum(TRUST_SERVICE_LEVELS, { error: `must be one of ${TRUST_SERVICE_LEVELS.join(', ')}` }))
    .min(1, 'must name at least one level')
    .refine((levels) => new Set(levels).size === levels.length, 'must not name a level twice'),
});

/** A trust service as the settings answer it: the client secret only said to be set. */
export type TrustServiceData = { id: string; name: string; baseUrl: string; clientId: string; clientSecretSet: boolean; levels: TrustServiceLevel[] };
/** As stored: the client secret encrypted (webhook/webhook-secret.ts). */
export type StoredTrustService = Omit<TrustServiceData, 'clientSecretSet'> & { clientSecret: string | null };

/** The document as a PATCH gives it: any key, any section, any of its keys. */
export const teamSettingsPatch = z.strictObject({
  /** The name people see: the From name of mails, their subjects, the signing page. Null: the mails' From as configured. */
  displayName: boundedText(1, 100).nullable().optional(),
  /** The Reply-To of the team's mails. Null: none (replies go to MAIL_FROM). */
  replyTo: emailAddress.nullable().optional(),
  notifications: notificationsSection.partial().optional(),
  branding: brandingSection.partial().optional(),
  embedding: embeddingSection.partial().optional(),
  artefacts: artefactsSection.partial().optional(),
  /** Replaces the list whole (ids unique); null or empty: none. */
  trustServices: z
    .array(trustServiceInput)
    .max(MAX_TRUST_SERVICES, `at most ${MAX_TRUST_SERVICES} trust services`)
    .refine((services) => new Set(services.map((service) => service.id)).size === services.length, 'must not name an id twice')
    .nullable()
    .optional(),
});

/** The logo as answered: what is stored, and where the service serves it. */
export type TeamLogo = StoredLogo & { url: string };

/** The whole document, every key present (null when not set). */
export type TeamSettingsData = {
  displayName: string | null;
  replyTo: string | null;
  notifications: { emails: string[] | null; events: TeamNoticeEvent[] | null; locale: Locale | null };
  branding: { logo: TeamLogo | null; accentColor: string | null; footer: string | null };
  embedding: { frameOrigins: string[] | null };
  artefacts: { stamp: boolean | null };
  /** The CSC v2 providers the team's advanced and qualified signers sign at (issue 35). */
  trustServices: TrustServiceData[];
  /** How many times the settings were changed (0: never). */
  version: number;
};

const SECTIONS = ['notifications', 'branding', 'embedding', 'artefacts'] as const;

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

/**
 * The origins that may frame a team's signing pages: the team's `embedding.frameOrigins` when it
 * has set one (an empty list: none), else the service-wide SIGNING_FRAME_ANCESTORS. One list for
 * both uses, so they cannot disagree: what a signing URL's `frameOrigin` may name, and who may
 * frame a page that names none (an invitation link's, a signing URL made without `frameOrigin`).
 * `stored` is the settings' raw `embedding.frameOrigins`.
 */
export function teamFrameOrigins(stored: unknown, serviceWide: readonly string[]): readonly string[] {
  return listOrNull(stored) ?? serviceWide;
}

function listOrNull<T = string>(value: unknown): T[] | null {
  return Array.isArray(value) ? (value.map(String) as T[]) : null;
}

function storedLogo(value: unknown): StoredLogo | null {
  const logo = value as Partial<StoredLogo> | null | undefined;
  if (!logo || typeof logo !== 'object' || typeof logo.sha256 !== 'string' || !isSha256(logo.sha256)) return null;
  return {
    sha256: logo.sha256,
    contentType: logo.contentType === 'image/png' ? 'image/png' : 'image/jpeg',
    width: Number(logo.width),
    height: Number(logo.height),
    byteSize: Number(logo.byteSize),
  };
}

/** The stored document over the defaults (a stored key not in the schema any more is left out). */
export function completeTeamSettings(stored: unknown, version: number, publicUrl: string): TeamSettingsData {
  const document = (stored && typeof stored === 'object' ? stored : {}) as Record<string, unknown>;
  const section = (name: string) => (document[name] && typeof document[name] === 'object' ? (document[name] as Record<string, unknown>) : {});
  const notifications = section('notifications');
  const branding = section('branding');
  const logo = storedLogo(branding.logo);
  const locale = stringOrNull(notifications.locale);
  return {
    displayName: stringOrNull(document.displayName),
    replyTo: stringOrNull(document.replyTo),
    notifications: {
      emails: listOrNull(notifications.emails),
      events: listOrNull<TeamNoticeEvent>(notifications.events),
      locale: (locales as readonly string[]).includes(locale ?? '') ? (locale as Locale) : null,
    },
    branding: { logo: logo ? { ...logo, url: logoUrl(publicUrl, logo) } : null, accentColor: stringOrNull(branding.accentColor), footer: stringOrNull(branding.footer) },
    embedding: { frameOrigins: listOrNull(section('embedding').frameOrigins) },
    artefacts: { stamp: typeof section('artefacts').stamp === 'boolean' ? (section('artefacts').stamp as boolean) : null },
    trustServices: storedTrustServices(document.trustServices).map(({ clientSecret, ...service }) => ({ ...service, clientSecretSet: clientSecret !== null })),
    version,
  };
}

/** The trust services as stored (their secrets encrypted), each well formed or left out. */
export function storedTrustServices(value: unknown): StoredTrustService[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry): StoredTrustService[] => {
    if (!entry || typeof entry !== 'object') return [];
    const service = entry as Record<string, unknown>;
    if (typeof service.id !== 'string' || typeof service.baseUrl !== 'string' || typeof service.clientId !== 'string') return [];
    const levels = (Array.isArray(service.levels) ? service.levels : []).filter((level): level is TrustServiceLevel => (TRUST_SERVICE_LEVELS as readonly unknown[]).includes(level));
    return [
      {
        id: service.id,
        name: typeof service.name === 'string' ? service.name : service.id,
        baseUrl: service.baseUrl,
        clientId: service.clientId,
        clientSecret: typeof service.clientSecret === 'string' ? service.clientSecret : null,
        levels,
      },
    ];
  });
}

/**
 * The trust services a PATCH gives, to store: a new secret encrypted, a left-out one kept from the
 * stored service of the same id, and a new service without one refused at its path.
 */
function trustServicesToStore(auditKey: Buffer, given: z.output<typeof trustServiceInput>[] | null, stored: unknown): StoredTrustService[] {
  const before = new Map(storedTrustServices(stored).map((service) => [service.id, service]));
  const issues: { path: string; message: string }[] = [];
  const result = (given ?? []).map((service, index): StoredTrustService => {
    const { clientSecret, ...keys } = service;
    const kept = before.get(service.id)?.clientSecret ?? null;
    if (clientSecret === undefined && kept === null) issues.push({ path: `trustServices[${index}].clientSecret`, message: 'is required for a new trust service' });
    return { ...keys, clientSecret: clientSecret === undefined ? kept : encryptSecret(auditKey, TRUST_SERVICE_SECRET_LABEL, clientSecret) };
  });
  if (issues.length > 0) throw new InvalidRequestError(issues);
  return result;
}

async function readRow(context: ServiceContext, teamId: string): Promise<{ settings: unknown; version: number }> {
  const [row] = await runRead<{ settings: unknown; version: number }>(
    context.reader,
    'team-settings',
    (db, slot) =>
      db
        .selectFrom('team as t')
        .select((eb) => [eb.ref('t.settings').as('settings'), eb.ref('t.settings_version').as('version')])
        .where('t.id', '=', slot(0)),
    [teamId],
  );
  if (!row) throw new TeamNotFoundError(teamId);
  return row;
}

/** The calling team's settings (REST `GET /team/settings`, GraphQL `teamSettings`). */
export async function readTeamSettings(context: ServiceContext): Promise<TeamSettingsData> {
  const caller = await context.caller();
  return teamSettingsOf(context, caller.teamId);
}

/** The settings of a team the caller already stands for (the signing URL's frame-origin check). */
export async function teamSettingsOf(context: ServiceContext, teamId: string): Promise<TeamSettingsData> {
  const row = await readRow(context, teamId);
  return completeTeamSettings(row.settings, row.version, context.publicUrl);
}

/**
 * Changes the calling team's settings: the sections and keys given replace the stored ones, the
 * whole result is valid or nothing changes (`Request.Invalid` with every problem), and the change
 * is recorded as `team.settings_updated` (the keys given, old and new) on the team's trail.
 */
export async function updateTeamSettings(context: ServiceContext, options: { input: unknown }): Promise<TeamSettingsData> {
  const { branding, trustServices, ...rest } = parseInput(teamSettingsPatch, options.input);
  const caller = await context.caller();
  // A new logo is stored before the transaction (by its hash: storing it twice keeps one object);
  // one the transaction then fails to name is an orphan, removed by the orphan sweep.
  const patch: Record<string, unknown> = { ...rest };
  if (branding) {
    const { logo, ...keys } = branding;
    patch.branding = logo === undefined ? keys : { ...keys, logo: logo === null ? null : await storeLogo(context, logo.data.bytes, logo.data.image) };
  }
  return context.em.transactional(async (em) => {
    const [row] = await em.execute<{ settings: Record<string, unknown>; settings_version: number }[]>('select settings, settings_version from team where id = ? for update', [caller.teamId]);
    if (!row) throw new TeamNotFoundError(caller.teamId);
    const before = completeTeamSettings(row.settings, row.settings_version, context.publicUrl) as unknown as Record<string, unknown>;
    const stored: Record<string, unknown> = { ...(row.settings ?? {}) };
    const changes: Record<string, { from: unknown; to: unknown }> = {};
    for (const [key, value] of Object.entries(patch)) {
      if (value === undefined) continue;
      if (!(SECTIONS as readonly string[]).includes(key)) {
        // A top-level value (display name, reply-to): replaced whole.
        changes[key] = { from: before[key], to: value };
        stored[key] = value;
        continue;
      }
      const keys = value as Record<string, unknown>;
      stored[key] = { ...((stored[key] as Record<string, unknown> | undefined) ?? {}), ...keys };
      for (const [name, given] of Object.entries(keys)) {
        const previous = (before[key] as Record<string, unknown>)[name];
        // The trail names a logo by its hash and shape, never by a URL that depends on PUBLIC_URL.
        changes[`${key}.${name}`] = { from: name === 'logo' ? storedLogo(previous) : previous, to: given };
      }
    }
    if (trustServices !== undefined) {
      stored.trustServices = trustServicesToStore(context.auditKey, trustServices, row.settings?.trustServices);
      // The trail names the services as answered: a secret is never written there, encrypted or not.
      changes.trustServices = { from: before.trustServices, to: completeTeamSettings(stored, 0, context.publicUrl).trustServices };
    }
    const version = row.settings_version + 1;
    // Guarded by the version read under the lock: a writer that did not take the lock cannot interleave.
    const [updated] = await em.execute<{ id: string }[]>('update team set settings = ?, settings_version = ? where id = ? and settings_version = ? returning id', [
      JSON.stringify(stored),
      version,
      caller.teamId,
      row.settings_version,
    ]);
    if (!updated) throw new TeamNotFoundError(caller.teamId);
    await auditChange(context, { em, caller, now: context.clock.now() }, { envelopeId: null, type: 'team.settings_updated', details: { changes, version } as never });
    return completeTeamSettings(stored, version, context.publicUrl);
  });
}

async function storeLogo(context: ServiceContext, bytes: Buffer, image: LogoImage): Promise<StoredLogo> {
  const staged = await context.blobStore.stage(Readable.from([bytes]), { limitBytes: LOGO_MAX_BYTES });
  const stored = await staged.commit();
  return { sha256: stored.sha256, contentType: image.contentType, width: image.width, height: image.height, byteSize: stored.byteSize };
}

/**
 * Whether a blob is some team's current logo: the logo route serves only those, never any other
 * object of the store (documents live there too, under their hashes).
 */
export async function isTeamLogo(context: Pick<ServiceContext, 'reader'>, sha256: string): Promise<{ contentType: string } | null> {
  if (!isSha256(sha256)) return null;
  const [row] = await runRead<{ contentType: string | null }>(
    context.reader,
    'team-logo',
    (db, slot) =>
      db
        .selectFrom('team as t')
        .select(sql<string | null>`t.settings->'branding'->'logo'->>'contentType'`.as('contentType'))
        .where(sql<string>`t.settings->'branding'->'logo'->>'sha256'`, '=', slot(0))
        .limit(1),
    [sha256],
  );
  return row?.contentType ? { contentType: row.contentType } : null;
}
