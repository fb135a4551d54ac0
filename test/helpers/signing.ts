import { expect } from 'vitest';
import { makePdf } from '../fixtures/pdfs.ts';
import { uploadDocument } from './envelopes.ts';
import { type GraphQLResult, graphqlClient, restClient, type TestApp } from './harness.ts';

export type FieldSpec = {
  identifier: string;
  type?: string;
  required?: boolean;
  readonly?: boolean;
  value?: unknown;
  config?: unknown;
  visibleWhen?: unknown;
  /** Where on the document's first page (default: stacked at the left, 120×30). */
  view?: { x: number; y: number; width: number; height: number };
};

export type RecipientSpec = {
  identifier: string;
  type?: 'signer' | 'host' | 'in_person_signer' | 'delegator' | 'viewer' | 'approver';
  order?: number;
  /** An approver's quorum. */
  quorum?: number;
  required?: boolean;
  /** Default: one inline agent named after the identifier. */
  agents?: unknown[];
  /** The identifier of the host (in_person_signer). */
  hostedBy?: string;
  /** advanced or qualified: signs at a trust service of the team's (issue 35). */
  signatureLevel?: 'simple' | 'advanced' | 'qualified';
  /** Default: one required simple signature for signing types, none for hosts and viewers. */
  fields?: FieldSpec[];
};

export type BuiltEnvelope = {
  envelopeId: string;
  documentId: string;
  recipients: Record<string, string>;
  fields: Record<string, string>;
};

/** A draft with one 2-page document and the given recipients and fields, built through REST. */
export async function buildEnvelope(
  app: TestApp,
  apiKey: string,
  spec: {
    name?: string;
    /** The envelope's `stamp` setting (left out: the team's default). */
    stamp?: boolean;
    expirationPeriodDays?: number;
    reminders?: { reminderInitialDelayDays?: number; reminderRepeatIntervalDays?: number; reminderBeforeExpirationDays?: number };
    recipients: RecipientSpec[];
  },
): Promise<BuiltEnvelope> {
  const rest = restClient(app, apiKey);
  const created = await rest.post('/envelopes', {
    name: spec.name ?? 'Workflow test',
    expirationPeriodDays: spec.expirationPeriodDays ?? 90,
    ...spec.reminders,
    ...(spec.stamp === undefined ? {} : { stamp: spec.stamp }),
  });
  expect(created.status).toBe(200);
  const envelopeId = created.body.payload.envelopeId as string;
  const document = await uploadDocument(app, apiKey, envelopeId, { bytes: await makePdf({ pages: 2 }) });
  expect(document.status).toBe(200);
  const documentId = document.body.payload.document.id as string;
  const recipients: Record<string, string> = {};
  // Hosts first, so that in-person signers can name them.
  const ordered = [...spec.recipients].sort((a, b) => Number(b.type === 'host') - Number(a.type === 'host'));
  for (const recipient of ordered) {
    const added = await rest.post(`/envelopes/${envelopeId}/recipients`, {
      recipient: {
        type: recipient.type ?? 'signer',
        identifier: recipient.identifier,
        roleName: recipient.identifier,
        order: recipient.order ?? 1,
        required: recipient.required ?? true,
        ...(recipient.quorum !== undefined ? { quorum: recipient.quorum } : {}),
        ...(recipient.hostedBy ? { hostedById: recipients[recipient.hostedBy] } : {}),
        ...(recipient.signatureLevel ? { signatureLevel: recipient.signatureLevel } : {}),
        agents: recipient.agents ?? [{ info: { name: `Person ${recipient.identifier}`, email: `${recipient.identifier}@example.com` } }],
      },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    recipients[recipient.identifier] = added.body.payload.recipient.id;
  }
  const fields: Record<string, string> = {};
  const fieldInputs: unknown[] = [];
  for (const recipient of spec.recipients) {
    const signing = ['signer', 'in_person_signer', 'delegator'].includes(recipient.type ?? 'signer');
    const specs = recipient.fields ?? (signing ? [{ identifier: `${recipient.identifier}-signature`, required: true }] : []);
    for (const [index, field] of specs.entries()) {
      fieldInputs.push({
        type: field.type ?? 'simple_signature',
        recipientId: recipients[recipient.identifier],
        identifier: field.identifier,
        required: field.required ?? true,
        ...(field.readonly !== undefined ? { readonly: field.readonly } : {}),
        ...(field.value !== undefined ? { value: field.value } : {}),
        ...(field.config !== undefined ? { config: field.config } : {}),
        ...(field.visibleWhen !== undefined ? { visibleWhen: field.visibleWhen } : {}),
        views: [
          field.view
            ? { documentId, page: 0, location: { x: field.view.x, y: field.view.y }, size: { width: field.view.width, height: field.view.height } }
            : { documentId, page: 0, location: { x: 20, y: 20 + index * 40 }, size: { width: 120, height: 30 } },
        ],
      });
    }
  }
  if (fieldInputs.length > 0) {
    const created = await rest.post(`/envelopes/${envelopeId}/fields`, { fields: fieldInputs });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    for (const field of created.body.payload.fields) fields[field.identifier] = field.id;
  }
  return { envelopeId, documentId, recipients, fields };
}

export type Invitation = {
  recipientId: string;
  agentId: string;
  personIndex: number;
  hostFor: string | null;
  to: { name: string; email: string | null };
  token: string;
  link: string;
};

/** The invitations queued in the outbox for an envelope, oldest first, with the token of each link. */
export async function invitationsOf(app: TestApp, envelopeId: string): Promise<Invitation[]> {
  const rows = await app.orm.em.fork().execute<{ payload: any }[]>(
    `select payload from outbox_message where topic = 'signing.invitation' and payload ->> 'envelopeId' = ?
        order by created_at, payload ->> 'recipientId', payload -> 'to' ->> 'name', (payload ->> 'personIndex')::int`,
    [envelopeId],
  );
  return rows.map(({ payload }) => ({
    recipientId: payload.recipientId,
    agentId: payload.agentId,
    personIndex: payload.personIndex,
    hostFor: payload.hostFor,
    to: payload.to,
    link: payload.secret.link,
    token: String(payload.secret.link).split('/sign/')[1],
  }));
}

/** The one token of the first invitation to a recipient (by id). */
export async function tokenFor(app: TestApp, envelopeId: string, recipientId: string, which = 0): Promise<string> {
  const invitations = (await invitationsOf(app, envelopeId)).filter((invitation) => invitation.recipientId === recipientId);
  expect(invitations.length, `invitations for ${recipientId}`).toBeGreaterThan(which);
  return invitations[which].token;
}

/** A GraphQL caller holding a signing link (X-Signing-Token), no team key. */
export function signingClient(app: TestApp, token: string | undefined) {
  return graphqlClient(app, undefined, { 'user-agent': 'signing-test', ...(token === undefined ? {} : { 'x-signing-token': token }) });
}

export const sessionSelection = `envelope { id name status expiresAt } recipient { id type activatedAt completedAt delegatedAt }
  signerName isMyTurn isExpired requiredFieldIds documents { id name pageCount pages { index width height } }
  fields { id identifier type required readonly value submittedAt views { documentId page } }
  activeRecipients { id } hostedSigners { id activatedAt completedAt }`;

export const SESSION_QUERY = `{ signingSession { ${sessionSelection} } }`;
export const SUBMIT_MUTATION = `mutation($values: [SigningValueInput!], $complete: Boolean) { submitSigning(values: $values, complete: $complete) { ${sessionSelection} } }`;
export const APPROVE_MUTATION = `mutation($comment: String) { approveSigning(comment: $comment) { ${sessionSelection} approval { quorum approvals approvedByMe } } }`;
export const DECLINE_MUTATION = `mutation($reason: String!) { declineSigning(reason: $reason) { envelope { status } recipient { id } } }`;
export const DELEGATE_MUTATION = `mutation($person: SigningPersonInput!) { delegateSigning(person: $person) { recipientId delegatedAt } }`;
export const HOSTED_MUTATION = `mutation($recipientId: ID!) { startHostedSigning(recipientId: $recipientId) { recipientId token } }`;

/**
 * Sends a change as a client honouring `Envelope.Busy` would: while the answer is that refusal
 * (REST 409 or a GraphQL error), waits its `retryAfterSeconds` and sends again. The envelope's
 * turn queue bounds each wait (envelope-lock.ts), so on a loaded machine some of many racing
 * changes are refused this way by design; a race test asserts what the retried changes leave.
 */
export async function retryingWhileBusy<T extends { body?: any; errors?: any[] }>(send: () => Promise<T>, attempts = 20): Promise<T> {
  for (let attempt = 1; ; attempt += 1) {
    const answer = await send();
    const busy =
      answer.errors?.[0]?.extensions?.code === 'Envelope.Busy' ? answer.errors[0].extensions.context : answer.body?.error?.name === 'Envelope.Busy' ? answer.body.error.context : undefined;
    if (busy === undefined || attempt >= attempts) return answer;
    await new Promise((resolve) => setTimeout(resolve, (busy.retryAfterSeconds ?? 1) * 1000));
  }
}

export const typedSignature = { kind: 'typed', text: 'Ada Lovelace', font: 'cursive' };

/** Signs every required simple signature of the link's recipient and completes it. */
export async function signAndComplete(app: TestApp, token: string): Promise<GraphQLResult> {
  const client = signingClient(app, token);
  const session = await client(SESSION_QUERY);
  expect(session.errors, JSON.stringify(session.errors)).toBeUndefined();
  const values = session.data.signingSession.fields
    .filter((field: any) => !field.readonly && field.type === 'simple_signature')
    .map((field: any) => ({ fieldId: field.id, value: typedSignature }));
  return client(SUBMIT_MUTATION, { values, complete: true });
}
