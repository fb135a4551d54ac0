import { type ExpressionBuilder, sql } from 'kysely';
import { jsonArrayFrom } from 'kysely/helpers/postgres';
import type { EnvelopeStatus } from '../envelope/envelope.entity.ts';
import type { FieldType } from '../field/field.entity.ts';
import { resolveFields, type VisibleWhen } from '../field/field-rules.js';
import { SERVICE_FILLED_TYPES } from '../field/field-values.ts';
import { otpStatus, type SigningOtpStatus } from '../notification/otp-policy.ts';
import { type DocumentData, documentsOf, type FieldData, fieldColumns, type RecipientCoreData } from '../owner/owner.read.ts';
import { isoTimestamp, type ReadDb, runRead } from '../read-model.ts';
import { agentPersonSql } from '../recipient/agent-people.ts';
import { completeTeamSettings } from '../team/team-settings.ts';
import { isExpiredAt } from './expiry.ts';

/*
 * The recipient side's read model: what one signing link may see, in one statement. Nothing
 * outside the link's own envelope is reachable, and of the envelope only what a signer needs:
 * its documents (with page sizes), this recipient's fields (with views and current values),
 * whose turn it is, and for a host the in-person signers it hosts.
 */

/** A role as the signing page sees it: its keys (`color` for its fields on the page) and where its turn stands. */
export type SigningRoleData = Pick<RecipientCoreData, 'id' | 'identifier' | 'roleName' | 'type' | 'order' | 'required' | 'color'> & {
  activatedAt: string | null;
  completedAt: string | null;
  delegatedAt: string | null;
  declinedAt: string | null;
  /** The person in the role (its current agent's first person), when named. */
  personName: string | null;
};

export type SigningSessionData = {
  /** `revision`: 0 at send, one more per correction; the page submits the one it loaded. */
  envelope: { id: string; name: string; status: EnvelopeStatus; sentAt: string | null; expiresAt: string | null; completedAt: string | null; revision: number };
  recipient: SigningRoleData;
  /** The person this link belongs to. */
  signerName: string;
  /** The person's locale (en-US, tr-TR) when the sender gave one. */
  locale: string | null;
  documents: DocumentData[];
  fields: FieldData[];
  /**
   * Other recipients' fields with a value, of roles that completed (earlier signers): the page
   * shows them over their boxes, read only, in that role's colour, with who gave them.
   */
  completedFields: SigningCompletedFieldData[];
  /** Acting roles whose turn it is now (activated, not completed). */
  activeRecipients: SigningRoleData[];
  /** For a host: the in-person signers it hosts. */
  hostedSigners: SigningRoleData[];
  /** For an approver: its quorum, the approvals so far, and whether this link's agent approved; null for other roles. */
  approval: SigningApprovalData | null;
  /** Computed from the above (see withTurn). */
  isExpired: boolean;
  isMyTurn: boolean;
  requiredFieldIds: string[];
  /** The link's one-time code: whether one is needed and verified (otp-policy.ts). */
  otp: SigningOtpStatus;
  /** The sending team as the page shows it (team settings: display name and branding), and whether a decline mails it. */
  sender: SigningSenderData;
  /** For a signer whose level is advanced or qualified: where its signature at the trust service stands; null for a simple signature. */
  trustSignature: SigningTrustSignatureData | null;
};

/**
 * A signer's signature at its trust service (trust-signing.ts): `not_started`, `authorizing` (the
 * browser is at the provider, or the documents are being prepared), `signing`, `signed`, or
 * `failed` with the error (Finish starts it over). `authorizeUrl` is answered once, by the Finish
 * that started the step: where to send the browser.
 */
export type SigningTrustSignatureData = {
  level: 'advanced' | 'qualified';
  trustServiceId: string | null;
  status: 'not_started' | 'authorizing' | 'signing' | 'signed' | 'failed';
  error: { name: string; reason: string; message: string; providerSaid: string | null } | null;
  authorizeUrl: string | null;
};

export type SigningApprovalData = { quorum: number; approvals: number; approvedByMe: boolean };

/** A field as any field is read, with the colour of its role and the name of who gave its value. */
export type SigningCompletedFieldData = FieldData & { color: string; signerName: string };

export type SigningSenderData = {
  displayName: string | null;
  /** The logo's path on this service (the page is on the same origin). */
  logoUrl: string | null;
  accentColor: string | null;
  footer: string | null;
  /** Whether declining mails the team (its notification settings name an address and the declined event). */
  declineNotified: boolean;
};

/** The one-time code's raw inputs, read with the session and turned into `otp` (never the phone itself). */
type RawOtp = { phone: string | null; phoneContactMethod: string | null; lastVerifiedAt: string | null; lastRequestedAt: string | null };

type RawSession = Omit<SigningSessionData, 'isExpired' | 'isMyTurn' | 'requiredFieldIds' | 'otp' | 'sender' | 'trustSignature'> & {
  otpInputs: RawOtp;
  teamSettings: unknown;
  /** `busySince`: when a callback took the step the service works on itself (preparing, signing). */
  trustSignature: (SigningTrustSignatureData & { busySince: string | null }) | null;
};

/**
 * A step the service works on itself (the documents prepared, the hashes signed and embedded)
 * takes seconds; one still at it after this long was cut off (the process died, the browser's
 * request with it) and is said as failed, `interrupted`: Finish again starts over. Longer than
 * the PDF worker's limit for preparing a signature (300 s) with room to spare.
 */
const TRUST_STEP_INTERRUPTED_AFTER_MS = 15 * 60_000;

function trustSignatureAt(raw: RawSession['trustSignature'], now: Date): SigningTrustSignatureData | null {
  if (raw === null) return null;
  const { busySince, ...signature } = raw;
  if (busySince === null || now.getTime() - new Date(busySince).getTime() < TRUST_STEP_INTERRUPTED_AFTER_MS) return signature;
  return {
    ...signature,
    status: 'failed',
    error: { name: 'Signing.TrustServiceFailed', reason: 'interrupted', message: 'Your last attempt was interrupted before it finished; finish again to retry.', providerSaid: null },
  };
}

/**
 * The person a role names: its current agent's first person (a delegation replaces the agent),
 * else nobody. What the page calls an in-person signer or an earlier signer by.
 */
function personNameOf(alias: string) {
  return sql<string | null>`(select ${agentPersonSql('g', 0)} ->> 'name' from agent g
    where g.recipient_id = ${sql.ref(`${alias}.id`)} and g.revoked_at is null order by g.position limit 1)`;
}

function roleObject(alias: string) {
  const ref = (column: string) => sql.ref(`${alias}.${column}`);
  return sql<SigningRoleData>`json_build_object(
    'id', ${ref('id')}, 'identifier', ${ref('identifier')}, 'roleName', ${ref('role_name')}, 'type', ${ref('type')},
    'personName', ${personNameOf(alias)},
    'order', ${ref('order')}, 'required', ${ref('required')}, 'color', ${ref('color')},
    'activatedAt', ${isoTimestamp(ref('activated_at'))}, 'completedAt', ${isoTimestamp(ref('completed_at'))},
    'delegatedAt', ${isoTimestamp(ref('delegated_at'))}, 'declinedAt', ${isoTimestamp(ref('declined_at'))})`;
}

/** The session of one signing token (by id; the caller has authenticated it). */
export async function readSigningSession(reader: ReadDb, tokenId: string, now: Date): Promise<SigningSessionData> {
  const [row] = await runRead<RawSession>(
    reader,
    'signing-session',
    (db, slot) =>
      db
        .selectFrom('signing_token as t')
        .innerJoin('recipient as r', 'r.id', 't.recipient_id')
        .innerJoin('envelope as e', 'e.id', 'r.envelope_id')
        .innerJoin('agent as a', 'a.id', 't.agent_id')
        .where('t.id', '=', slot(0))
        .select((eb: ExpressionBuilder<any, any>) => [
          sql`json_build_object('id', e.id, 'name', e.name, 'status', e.status, 'sentAt', ${isoTimestamp(sql.ref('e.sent_at'))},
            'expiresAt', ${isoTimestamp(sql.ref('e.expires_at'))}, 'completedAt', ${isoTimestamp(sql.ref('e.completed_at'))}, 'revision', e.revision)`.as('envelope'),
          roleObject('r').as('recipient'),
          sql`(select tm.settings from team tm where tm.id = e.team_id)`.as('teamSettings'),
          sql<string>`coalesce(${agentPersonSql('a', 't.person_index')} ->> 'name', '')`.as('signerName'),
          sql<string | null>`${agentPersonSql('a', 't.person_index')} ->> 'locale'`.as('locale'),
          // The one-time code (otp.service.ts): the person's phone, the link's last verification,
          // and the person's last request (resends are counted per person, not per link).
          sql<RawOtp>`json_build_object(
            'phone', ${agentPersonSql('a', 't.person_index')} ->> 'phone',
            'phoneContactMethod', ${agentPersonSql('a', 't.person_index')} ->> 'phoneContactMethod',
            'lastVerifiedAt', ${isoTimestamp(sql`(select max(o.verified_at) from signing_otp o where o.token_id = t.id)`)},
            'lastRequestedAt', ${isoTimestamp(sql`(select max(o.created_at) from signing_otp o where o.agent_id = t.agent_id and o.person_index = t.person_index)`)})`.as('otpInputs'),
          documentsOf(eb, { kind: 'envelope', ownerId: 'e.id' }, { keys: new Set(['id', 'name', 'order', 'status', 'pageCount', 'pages']) }).as('documents'),
          jsonArrayFrom(
            eb
              .selectFrom('field as f')
              .select((inner: ExpressionBuilder<any, any>) => fieldColumns(inner, { kind: 'envelope', alias: 'f' }, { include: { views: true } }))
              .whereRef('f.recipient_id', '=', 'r.id')
              .orderBy('f.created_at')
              .orderBy('f.identifier'),
          ).as('fields'),
          // Part of the same statement: the session stays one read.
          jsonArrayFrom(
            eb
              .selectFrom('field as f')
              .innerJoin('recipient as o', 'o.id', 'f.recipient_id')
              .select((inner: ExpressionBuilder<any, any>) => [
                ...fieldColumns(inner, { kind: 'envelope', alias: 'f' }, { include: { views: true } }),
                'o.color as color',
                // The person who signed the role: its current agent's first person, else the role's name.
                sql<string>`coalesce(${personNameOf('o')}, o.role_name, o.identifier)`.as('signerName'),
              ])
              .whereRef('o.envelope_id', '=', 'e.id')
              .whereRef('o.id', '<>', 'r.id')
              .where('o.completed_at', 'is not', null)
              .where('f.value', 'is not', null)
              .orderBy('o.order')
              .orderBy('f.created_at')
              .orderBy('f.identifier'),
          ).as('completedFields'),
          sql`(select coalesce(json_agg(${roleObject('x')} order by x.order, x.created_at, x.id), '[]'::json) from recipient x
            where x.envelope_id = e.id and x.activated_at is not null and x.completed_at is null and x.type <> 'viewer')`.as('activeRecipients'),
          sql<SigningApprovalData | null>`case when r.type = 'approver' then json_build_object('quorum', r.quorum,
            'approvals', (select count(*) from approval p where p.recipient_id = r.id),
            'approvedByMe', exists (select 1 from approval p where p.recipient_id = r.id and p.agent_id = t.agent_id)) end`.as('approval'),
          sql`(select coalesce(json_agg(${roleObject('h')} order by h.order, h.created_at, h.id), '[]'::json) from recipient h
            where h.hosted_by_id = r.id)`.as('hostedSigners'),
          sql<SigningTrustSignatureData | null>`case when r.signature_level <> 'simple' then (select json_build_object(
              'level', r.signature_level, 'trustServiceId', coalesce(s.trust_service_id, r.trust_service_id),
              'status', case when s.status is null then 'not_started' when s.status in ('service_authorizing', 'preparing', 'credential_authorizing') then 'authorizing' else s.status end,
              'error', case when s.status = 'failed' then s.error end, 'authorizeUrl', null,
              'busySince', case when s.status in ('preparing', 'signing') then ${isoTimestamp(sql.ref('s.updated_at'))} end)
            from (select 1) one left join signer_signature s on s.recipient_id = r.id) end`.as('trustSignature'),
        ]),
    [tokenId],
  );
  return withTurn(row, now);
}

/** The page's view of the sending team, from its settings document (the same rules as team-settings.ts). */
function senderOf(stored: unknown): SigningSenderData {
  const settings = completeTeamSettings(stored, 0, '');
  const { emails, events } = settings.notifications;
  return {
    displayName: settings.displayName,
    logoUrl: settings.branding.logo?.url ?? null,
    accentColor: settings.branding.accentColor,
    footer: settings.branding.footer,
    declineNotified: (emails?.length ?? 0) > 0 && (events === null || events.includes('declined')),
  };
}

function withTurn({ otpInputs, teamSettings, trustSignature, ...session }: RawSession, now: Date): SigningSessionData {
  const isExpired = isExpiredAt(session.envelope, now);
  const isMyTurn =
    session.envelope.status === 'sent' &&
    !isExpired &&
    session.recipient.activatedAt !== null &&
    session.recipient.completedAt === null &&
    session.recipient.type !== 'host' &&
    !session.approval?.approvedByMe;
  // What the signer still has to give: not a field the service fills at completion, nor one its
  // conditions hide (over this role's and earlier roles' values, as the service decides at submit).
  const rules = resolveFields(
    [...session.completedFields, ...session.fields].map((field) => ({
      identifier: field.identifier,
      type: field.type,
      config: field.config,
      value: field.value,
      visibleWhen: field.visibleWhen as VisibleWhen | null,
    })),
  );
  const requiredFieldIds = session.fields
    .filter((field) => field.required && field.value === null && !SERVICE_FILLED_TYPES.includes(field.type as FieldType) && rules.get(field.identifier)?.visible !== false)
    .map((field) => field.id);
  const otp = otpStatus({ ...otpInputs, recipientType: session.recipient.type, now });
  return { ...session, isExpired, isMyTurn, requiredFieldIds, otp, sender: senderOf(teamSettings), trustSignature: trustSignatureAt(trustSignature, now) };
}
