import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makePdf } from './fixtures/pdfs.ts';
import { uploadDocument, uploadDocumentThroughGraphql } from './helpers/envelopes.ts';
import { firstErrorName, graphqlClient, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { subscribe, untilWatching } from './helpers/live.ts';
import { startRecordingServer } from './helpers/recording-server.ts';
import { type BuiltEnvelope, buildEnvelope, invitationsOf, type RecipientSpec, SESSION_QUERY, signAndComplete, signingClient, tokenFor, typedSignature } from './helpers/signing.ts';
import { signingLinkIn, startSmtpServer, type TestSmtpServer } from './helpers/smtp.ts';
import { mainWorkerFor, webhookWorkerFor } from './helpers/workers.ts';

/*
 * Correcting a sent envelope (issue 33, item 2): the edit operations work on a sent envelope for
 * what nobody has acted on yet, through both faces; every change moves the revision; old links
 * die and new invitations go out on the recipient's turn; a submission on an older revision is
 * Signing.EnvelopeChanged; a correction racing a submission leaves exactly one of them applied.
 */

let app: TestApp;
let smtp: TestSmtpServer;

beforeAll(async () => {
  smtp = await startSmtpServer();
  app = await startTestApp({ env: { SMTP_URL: smtp.url, WEBHOOK_ALLOW_PRIVATE: 'true' } });
});
afterAll(async () => {
  await app.close();
  await smtp.close();
});

const ENVELOPE_QUERY = `query($id: ID!) { envelope(id: $id) { id status revision recipients { id identifier activatedAt completedAt } } }`;
const SUBMIT_WITH_REVISION = `mutation($values: [SigningValueInput!], $complete: Boolean, $revision: Int) {
  submitSigning(values: $values, complete: $complete, revision: $revision) { envelope { revision } recipient { completedAt } fields { id value } } }`;
const SESSION_WITH_REVISION = `{ signingSession { envelope { revision } recipient { id activatedAt completedAt } isMyTurn fields { id identifier } } }`;

function clients(team: SeededTeam) {
  return { rest: restClient(app, team.apiKey), graphql: graphqlClient(app, team.apiKey) };
}

async function sentEnvelope(team: SeededTeam, recipients: RecipientSpec[]): Promise<BuiltEnvelope> {
  const built = await buildEnvelope(app, team.apiKey, { recipients });
  const sent = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  return built;
}

async function auditOf(envelopeId: string, type: string) {
  return app.orm.em.fork().execute<{ details: any; actor_type: string }[]>('select details, actor_type from audit_event where envelope_id = ? and type = ? order by seq', [envelopeId, type]);
}

async function revisionOf(team: SeededTeam, envelopeId: string): Promise<number> {
  const read = await clients(team).rest.get(`/envelopes/${envelopeId}`);
  expect(read.status).toBe(200);
  return read.body.payload.envelope.revision;
}

function fieldInput(recipientId: string, documentId: string, identifier: string) {
  return { type: 'simple_signature', recipientId, identifier, required: true, views: [{ documentId, page: 0, location: { x: 300, y: 300 }, size: { width: 120, height: 30 } }] };
}

const twoSigners: RecipientSpec[] = [
  { identifier: 'ada', order: 1 },
  { identifier: 'bob', order: 2 },
];

describe('the revision', () => {
  it('is 0 at send and readable on both faces and in the signing session', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, twoSigners);
    const { graphql } = clients(team);
    expect(await revisionOf(team, built.envelopeId)).toBe(0);
    const read = await graphql(ENVELOPE_QUERY, { id: built.envelopeId });
    expect(read.data.envelope).toMatchObject({ status: 'sent', revision: 0 });
    const listed = await clients(team).rest.get('/envelopes');
    expect(listed.body.payload.envelopes.find((envelope: any) => envelope.id === built.envelopeId).revision).toBe(0);
    const session = await signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.ada))(SESSION_WITH_REVISION);
    expect(session.data.signingSession.envelope.revision).toBe(0);
  });
});

describe('changing an agent', () => {
  it('REST: the current recipient’s old link dies, its new person is mailed a working link, the change is audited with the sender and the revision', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [
      { identifier: 'ada', order: 1, agents: [{ info: { name: 'Ada Typo', email: 'ada@exmaple.com' } }] },
      { identifier: 'bob', order: 2 },
    ]);
    const oldToken = await tokenFor(app, built.envelopeId, built.recipients.ada);
    expect((await signingClient(app, oldToken)(SESSION_QUERY)).errors).toBeUndefined();
    const { rest } = clients(team);
    const changed = await rest.patch(`/envelopes/${built.envelopeId}/recipients/${built.recipients.ada}`, {
      recipient: { agents: [{ info: { name: 'Ada Lovelace', email: 'ada.corrected@example.com', locale: 'tr-TR' } }] },
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.payload.recipient.agents[0].info).toMatchObject({ name: 'Ada Lovelace', email: 'ada.corrected@example.com' });
    expect(await revisionOf(team, built.envelopeId)).toBe(1);

    // The old link is dead on every path the signer could take.
    expect(firstErrorName(await signingClient(app, oldToken)(SESSION_QUERY))).toBe('Signing.InvalidToken');
    expect((await fetch(`${app.url}/sign/${oldToken}`)).status).toBe(410);

    // The new person gets an invitation by mail, in their language, with a link that works.
    await mainWorkerFor(app, team.teamId).drain();
    const mails = smtp.to('ada.corrected@example.com');
    expect(mails).toHaveLength(1);
    expect(mails[0]!.mail.headers.get('content-language')).toBe('tr-TR');
    const link = signingLinkIn(mails[0]!);
    expect(link).not.toBeNull();
    const session = await signingClient(app, link!.token)(SESSION_WITH_REVISION);
    expect(session.errors).toBeUndefined();
    expect(session.data.signingSession).toMatchObject({ envelope: { revision: 1 }, isMyTurn: true });
    // Bob's turn has not come: nothing was sent to him.
    expect(smtp.to('bob@example.com')).toHaveLength(0);

    const [updated] = await auditOf(built.envelopeId, 'recipient.updated');
    expect(updated).toMatchObject({ actor_type: 'api_key', details: { recipientId: built.recipients.ada, changed: ['agents'], revision: 1 } });
    const [corrected] = await auditOf(built.envelopeId, 'envelope.corrected');
    expect(corrected).toMatchObject({ actor_type: 'api_key', details: { revision: 1, changes: ['recipient.updated'] } });
  });

  it('GraphQL: a recipient whose turn has not come keeps waiting; its new person is invited when its turn comes', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, twoSigners);
    const changed = await clients(team).graphql(
      `mutation($e: ID!, $r: ID!, $input: UpdateRecipientInput!) { updateRecipient(envelopeId: $e, recipientId: $r, input: $input) { id agents { info { name email } } } }`,
      { e: built.envelopeId, r: built.recipients.bob, input: { agents: [{ info: { name: 'Bob Fixed', email: 'bob.fixed@example.com' } }] } },
    );
    expect(changed.errors, JSON.stringify(changed.errors)).toBeUndefined();
    expect((await invitationsOf(app, built.envelopeId)).filter((invitation) => invitation.recipientId === built.recipients.bob)).toHaveLength(0);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const bobInvitations = (await invitationsOf(app, built.envelopeId)).filter((invitation) => invitation.recipientId === built.recipients.bob);
    expect(bobInvitations.map((invitation) => invitation.to.email)).toEqual(['bob.fixed@example.com']);
  });

  it('of a completed recipient is Recipient.AlreadyCompleted (409) on both faces, and nothing changes', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, twoSigners);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const { rest, graphql } = clients(team);
    const refused = await rest.patch(`/envelopes/${built.envelopeId}/recipients/${built.recipients.ada}`, {
      recipient: { agents: [{ info: { name: 'Someone Else', email: 'else@example.com' } }] },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ name: 'Recipient.AlreadyCompleted', context: { recipientIds: [built.recipients.ada] } });
    const refusedGraphql = await graphql(`mutation($e: ID!, $r: ID!) { updateRecipient(envelopeId: $e, recipientId: $r, input: { roleName: "Other" }) { id } }`, {
      e: built.envelopeId,
      r: built.recipients.ada,
    });
    expect(firstErrorName(refusedGraphql)).toBe('Recipient.AlreadyCompleted');
    expect(await revisionOf(team, built.envelopeId)).toBe(0);
    expect(await auditOf(built.envelopeId, 'envelope.corrected')).toHaveLength(0);
  });
});

describe('adding and removing recipients', () => {
  it('a recipient added at the current order is activated and invited; one added before a completed recipient is refused on both faces', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [
      { identifier: 'ada', order: 1 },
      { identifier: 'bob', order: 2 },
      { identifier: 'cy', order: 3 },
    ]);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const { rest, graphql } = clients(team);
    // Bob's turn now. Dee joins him at order 2, with her field in the same request's follow-up.
    const added = await rest.post(`/envelopes/${built.envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'dee', roleName: 'Dee', order: 2, agents: [{ info: { name: 'Dee', email: 'dee@example.com' } }] },
    });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const deeId = added.body.payload.recipient.id;
    expect(added.body.payload.recipient.activatedAt).not.toBeNull();
    const fields = await rest.post(`/envelopes/${built.envelopeId}/fields`, { fields: [fieldInput(deeId, built.documentId, 'dee-signature')] });
    expect(fields.status, JSON.stringify(fields.body)).toBe(200);
    expect(await revisionOf(team, built.envelopeId)).toBe(2);
    const deeToken = await tokenFor(app, built.envelopeId, deeId);
    const deeSession = await signingClient(app, deeToken)(SESSION_WITH_REVISION);
    expect(deeSession.data.signingSession).toMatchObject({ isMyTurn: true, fields: [{ identifier: 'dee-signature' }] });

    // Before Ada, who completed: refused, on both faces.
    const early = await rest.post(`/envelopes/${built.envelopeId}/recipients`, {
      recipient: { type: 'signer', identifier: 'eve', roleName: 'Eve', order: 0, agents: [{ info: { name: 'Eve', email: 'eve@example.com' } }] },
    });
    expect(early.status).toBe(409);
    expect(early.body.error).toMatchObject({ name: 'Recipient.AlreadyCompleted', context: { recipientIds: [built.recipients.ada], order: 0 } });
    const earlyGraphql = await graphql(`mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id } }`, {
      e: built.envelopeId,
      input: { type: 'signer', identifier: 'eve', roleName: 'Eve', order: 0, agents: [{ info: { name: 'Eve', email: 'eve@example.com' } }] },
    });
    expect(firstErrorName(earlyGraphql)).toBe('Recipient.AlreadyCompleted');
    // Moving a recipient before Ada is refused alike.
    const moved = await rest.patch(`/envelopes/${built.envelopeId}/recipients/${built.recipients.cy}`, { recipient: { order: 0 } });
    expect(moved.body.error?.name).toBe('Recipient.AlreadyCompleted');
    expect(await revisionOf(team, built.envelopeId)).toBe(2);
  });

  it('a recipient added before the current one takes the turn: the current one is deactivated (its link dies) and invited again when its turn comes', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [
      { identifier: 'ada', order: 1 },
      { identifier: 'bob', order: 3 },
    ]);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const bobFirstToken = await tokenFor(app, built.envelopeId, built.recipients.bob);
    const graphql = clients(team).graphql;
    const added = await graphql(`mutation($e: ID!, $input: AddRecipientInput!) { addRecipient(envelopeId: $e, input: $input) { id activatedAt } }`, {
      e: built.envelopeId,
      input: { type: 'signer', identifier: 'cy', roleName: 'Cy', order: 2, agents: [{ info: { name: 'Cy', email: 'cy@example.com' } }] },
    });
    expect(added.errors, JSON.stringify(added.errors)).toBeUndefined();
    const cyId = added.data.addRecipient.id;
    const fields = await graphql(`mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }`, {
      e: built.envelopeId,
      fields: [fieldInput(cyId, built.documentId, 'cy-signature')],
    });
    expect(fields.errors, JSON.stringify(fields.errors)).toBeUndefined();
    const read = await graphql(ENVELOPE_QUERY, { id: built.envelopeId });
    const byIdentifier = Object.fromEntries(read.data.envelope.recipients.map((recipient: any) => [recipient.identifier, recipient]));
    expect(byIdentifier.cy.activatedAt).not.toBeNull();
    expect(byIdentifier.bob.activatedAt).toBeNull();
    expect(firstErrorName(await signingClient(app, bobFirstToken)(SESSION_QUERY))).toBe('Signing.InvalidToken');
    expect(await auditOf(built.envelopeId, 'recipient.deactivated')).toMatchObject([{ details: { recipientId: built.recipients.bob, revision: 1 } }]);

    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, cyId))).errors).toBeUndefined();
    const bobAgain = (await invitationsOf(app, built.envelopeId)).filter((invitation) => invitation.recipientId === built.recipients.bob);
    expect(bobAgain).toHaveLength(2);
    expect((await signAndComplete(app, bobAgain[1]!.token)).errors).toBeUndefined();
    expect((await graphql(ENVELOPE_QUERY, { id: built.envelopeId })).data.envelope.status).toBe('finalized');
  });

  it('removing the current recipient moves the turn on (REST); removing a completed one is refused on both faces', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [
      { identifier: 'ada', order: 1 },
      { identifier: 'bob', order: 2 },
      { identifier: 'cy', order: 3 },
    ]);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const bobToken = await tokenFor(app, built.envelopeId, built.recipients.bob);
    const { rest, graphql } = clients(team);
    const removed = await rest.delete(`/envelopes/${built.envelopeId}/recipients/${built.recipients.bob}`);
    expect(removed.status, JSON.stringify(removed.body)).toBe(200);
    expect(firstErrorName(await signingClient(app, bobToken)(SESSION_QUERY))).not.toBeUndefined();
    const cyToken = await tokenFor(app, built.envelopeId, built.recipients.cy);
    expect((await signingClient(app, cyToken)(SESSION_WITH_REVISION)).data.signingSession).toMatchObject({ isMyTurn: true, envelope: { revision: 1 } });
    expect(await auditOf(built.envelopeId, 'recipient.removed')).toMatchObject([{ details: { recipientId: built.recipients.bob, revision: 1 } }]);

    const refused = await rest.delete(`/envelopes/${built.envelopeId}/recipients/${built.recipients.ada}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.name).toBe('Recipient.AlreadyCompleted');
    const refusedGraphql = await graphql(`mutation($e: ID!, $r: ID!) { deleteRecipient(envelopeId: $e, recipientId: $r) { id } }`, { e: built.envelopeId, r: built.recipients.ada });
    expect(firstErrorName(refusedGraphql)).toBe('Recipient.AlreadyCompleted');
  });

  it('removing the last recipient still to sign (GraphQL) finalizes the envelope, once', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, twoSigners);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const { graphql } = clients(team);
    const removed = await graphql(`mutation($e: ID!, $r: ID!) { deleteRecipient(envelopeId: $e, recipientId: $r) { id } }`, { e: built.envelopeId, r: built.recipients.bob });
    expect(removed.errors, JSON.stringify(removed.errors)).toBeUndefined();
    expect((await graphql(ENVELOPE_QUERY, { id: built.envelopeId })).data.envelope).toMatchObject({ status: 'finalized', revision: 1 });
    expect(await auditOf(built.envelopeId, 'envelope.finalized')).toHaveLength(1);
  });
});

describe('fields', () => {
  it('of recipients that have not completed are added, changed and removed (both faces); a completed recipient’s are refused', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [
      { identifier: 'ada', order: 1 },
      { identifier: 'bob', order: 2, fields: [{ identifier: 'bob-signature' }, { identifier: 'bob-initials', required: false }] },
    ]);
    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const { rest, graphql } = clients(team);

    const added = await rest.post(`/envelopes/${built.envelopeId}/fields`, { fields: [fieldInput(built.recipients.bob, built.documentId, 'bob-extra')] });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const changed = await graphql(`mutation($e: ID!, $f: ID!) { updateField(envelopeId: $e, fieldId: $f, input: { label: "Sign here, Bob" }) { label } }`, {
      e: built.envelopeId,
      f: built.fields['bob-signature'],
    });
    expect(changed.errors, JSON.stringify(changed.errors)).toBeUndefined();
    const removed = await graphql(`mutation($e: ID!, $f: ID!) { deleteField(envelopeId: $e, fieldId: $f) { id } }`, { e: built.envelopeId, f: built.fields['bob-initials'] });
    expect(removed.errors, JSON.stringify(removed.errors)).toBeUndefined();
    expect(await revisionOf(team, built.envelopeId)).toBe(3);
    const bobSession = await signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.bob))(SESSION_WITH_REVISION);
    expect(bobSession.data.signingSession.fields.map((field: any) => field.identifier).sort()).toEqual(['bob-extra', 'bob-signature']);

    // Ada completed: her fields, and new ones for her, are refused on both faces.
    const refusals = [
      await rest.post(`/envelopes/${built.envelopeId}/fields`, { fields: [fieldInput(built.recipients.ada, built.documentId, 'ada-extra')] }),
      await rest.patch(`/envelopes/${built.envelopeId}/fields/${built.fields['ada-signature']}`, { field: { label: 'x' } }),
      await rest.delete(`/envelopes/${built.envelopeId}/fields/${built.fields['ada-signature']}`),
      // Moving Bob's field to Ada touches her too.
      await rest.patch(`/envelopes/${built.envelopeId}/fields/${built.fields['bob-signature']}`, { field: { recipientId: built.recipients.ada } }),
    ];
    for (const refused of refusals) {
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.error.name).toBe('Recipient.AlreadyCompleted');
    }
    expect(firstErrorName(await graphql(`mutation($e: ID!, $f: ID!) { deleteField(envelopeId: $e, fieldId: $f) { id } }`, { e: built.envelopeId, f: built.fields['ada-signature'] }))).toBe(
      'Recipient.AlreadyCompleted',
    );
    expect(
      firstErrorName(
        await graphql(`mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }`, {
          e: built.envelopeId,
          fields: [fieldInput(built.recipients.ada, built.documentId, 'ada-extra')],
        }),
      ),
    ).toBe('Recipient.AlreadyCompleted');
    expect(await revisionOf(team, built.envelopeId)).toBe(3);
  });
});

describe('documents', () => {
  it('are added, renamed and removed while nobody has completed anything (both faces); afterwards Envelope.AlreadySigned', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, twoSigners);
    const { rest, graphql } = clients(team);
    const added = await uploadDocument(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }), filename: 'annex.pdf' });
    expect(added.status, JSON.stringify(added.body)).toBe(200);
    const annexId = added.body.payload.document.id;
    const viaGraphql = await uploadDocumentThroughGraphql(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }), filename: 'schedule.pdf' });
    expect(viaGraphql.body.errors, JSON.stringify(viaGraphql.body)).toBeUndefined();
    const scheduleId = viaGraphql.body.data.addDocument.id;
    expect((await rest.patch(`/envelopes/${built.envelopeId}/documents/${annexId}`, { name: 'Annex A.pdf' })).status).toBe(200);
    const removed = await graphql(`mutation($e: ID!, $d: ID!) { deleteDocument(envelopeId: $e, documentId: $d) { id } }`, { e: built.envelopeId, d: scheduleId });
    expect(removed.errors, JSON.stringify(removed.errors)).toBeUndefined();
    expect(await revisionOf(team, built.envelopeId)).toBe(4);
    const session = await signingClient(app, await tokenFor(app, built.envelopeId, built.recipients.ada))(SESSION_QUERY);
    expect(session.data.signingSession.documents.map((document: any) => document.name).sort()).toEqual(['Annex A.pdf', 'contract.pdf']);

    expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients.ada))).errors).toBeUndefined();
    const refusedUpload = await uploadDocument(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(refusedUpload.status).toBe(409);
    expect(refusedUpload.body.error.name).toBe('Envelope.AlreadySigned');
    const refusedGraphqlUpload = await uploadDocumentThroughGraphql(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(refusedGraphqlUpload.body.errors?.[0]?.extensions?.name ?? refusedGraphqlUpload.body.errors?.[0]?.extensions?.code).toBe('Envelope.AlreadySigned');
    const refusedRename = await rest.patch(`/envelopes/${built.envelopeId}/documents/${annexId}`, { name: 'Other.pdf' });
    expect(refusedRename.status).toBe(409);
    expect(refusedRename.body.error.name).toBe('Envelope.AlreadySigned');
    expect(firstErrorName(await graphql(`mutation($e: ID!, $d: ID!) { deleteDocument(envelopeId: $e, documentId: $d) { id } }`, { e: built.envelopeId, d: annexId }))).toBe(
      'Envelope.AlreadySigned',
    );
    expect((await rest.delete(`/envelopes/${built.envelopeId}/documents/${annexId}`)).body.error.name).toBe('Envelope.AlreadySigned');
    expect(await revisionOf(team, built.envelopeId)).toBe(4);
  });
});

describe('an approver role', () => {
  it('that one agent approved counts as acted: the role and the documents are no longer the sender’s (both faces)', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [
      {
        identifier: 'board',
        type: 'approver',
        order: 1,
        quorum: 2,
        agents: [{ info: { name: 'Board One', email: 'one@example.com' } }, { info: { name: 'Board Two', email: 'two@example.com' } }],
      },
      { identifier: 'ceo', order: 2 },
    ]);
    const [first] = (await invitationsOf(app, built.envelopeId)).filter((invitation) => invitation.recipientId === built.recipients.board);
    const approved = await signingClient(app, first!.token)(`mutation { approveSigning { recipient { id } } }`);
    expect(approved.errors, JSON.stringify(approved.errors)).toBeUndefined();
    const { rest, graphql } = clients(team);
    const refused = await rest.patch(`/envelopes/${built.envelopeId}/recipients/${built.recipients.board}`, { recipient: { quorum: 1 } });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ name: 'Recipient.AlreadyCompleted', context: { recipientIds: [built.recipients.board] } });
    const upload = await uploadDocument(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }) });
    expect(upload.body.error?.name).toBe('Envelope.AlreadySigned');
    // The role after it is still open to corrections.
    const ceo = await graphql(`mutation($e: ID!, $r: ID!) { updateRecipient(envelopeId: $e, recipientId: $r, input: { roleName: "Chief executive" }) { roleName } }`, {
      e: built.envelopeId,
      r: built.recipients.ceo,
    });
    expect(ceo.errors, JSON.stringify(ceo.errors)).toBeUndefined();
    expect(await revisionOf(team, built.envelopeId)).toBe(1);
  });
});

describe('closed envelopes', () => {
  it('keep refusing edits with Envelope.NotDraft (voided and finalized), on both faces', async () => {
    const team = await seedTeam(app);
    const { rest, graphql } = clients(team);
    const voided = await sentEnvelope(team, twoSigners);
    expect((await rest.post(`/envelopes/${voided.envelopeId}/void`, { reason: 'wrong terms' })).status).toBe(200);
    const refused = await rest.patch(`/envelopes/${voided.envelopeId}/recipients/${voided.recipients.bob}`, { recipient: { roleName: 'Other' } });
    expect(refused.status).toBe(409);
    expect(refused.body.error).toMatchObject({ name: 'Envelope.NotDraft', context: { status: 'voided' } });
    const finalized = await sentEnvelope(team, [{ identifier: 'ada' }]);
    expect((await signAndComplete(app, await tokenFor(app, finalized.envelopeId, finalized.recipients.ada))).errors).toBeUndefined();
    const refusedGraphql = await graphql(`mutation($e: ID!, $fields: [FieldInput!]!) { createFields(envelopeId: $e, fields: $fields) { id } }`, {
      e: finalized.envelopeId,
      fields: [fieldInput(finalized.recipients.ada, finalized.documentId, 'late')],
    });
    expect(firstErrorName(refusedGraphql)).toBe('Envelope.NotDraft');
  });
});

describe('a signing session on an older revision', () => {
  it('is refused at submit with Signing.EnvelopeChanged and nothing saved; the reloaded session submits', async () => {
    const team = await seedTeam(app);
    const built = await sentEnvelope(team, [{ identifier: 'ada', order: 1, fields: [{ identifier: 'ada-signature' }, { identifier: 'ada-note', type: 'text', required: false }] }]);
    const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
    const signer = signingClient(app, token);
    const loaded = (await signer(SESSION_WITH_REVISION)).data.signingSession;
    expect(loaded.envelope.revision).toBe(0);
    const changed = await clients(team).rest.patch(`/envelopes/${built.envelopeId}/fields/${built.fields['ada-note']}`, { field: { label: 'Your note' } });
    expect(changed.status).toBe(200);

    const stale = await signer(SUBMIT_WITH_REVISION, { values: [{ fieldId: built.fields['ada-signature'], value: typedSignature }], complete: true, revision: 0 });
    expect(firstErrorName(stale)).toBe('Signing.EnvelopeChanged');
    expect(stale.errors![0].extensions).toMatchObject({ context: { revision: 1, submittedRevision: 0 } });
    const after = await app.orm.em.fork().execute<{ value: unknown }[]>('select value from field where id = ?', [built.fields['ada-signature']]);
    expect(after[0]!.value).toBeNull();

    const reloaded = (await signer(SESSION_WITH_REVISION)).data.signingSession;
    expect(reloaded.envelope.revision).toBe(1);
    const fresh = await signer(SUBMIT_WITH_REVISION, { values: [{ fieldId: built.fields['ada-signature'], value: typedSignature }], complete: true, revision: reloaded.envelope.revision });
    expect(fresh.errors, JSON.stringify(fresh.errors)).toBeUndefined();
    expect(fresh.data.submitSigning.recipient.completedAt).not.toBeNull();
  });
});

describe('a correction racing a submission', () => {
  it('20 rounds against PostgreSQL: exactly one of them is applied, the other gets its named refusal, nothing half-applied', async () => {
    const team = await seedTeam(app);
    const { rest } = clients(team);
    const wins = { correction: 0, submission: 0 };
    for (let round = 0; round < 20; round += 1) {
      const built = await sentEnvelope(team, [{ identifier: 'ada' }]);
      const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
      const [correction, submission] = await Promise.all([
        rest.patch(`/envelopes/${built.envelopeId}/fields/${built.fields['ada-signature']}`, { field: { label: `Round ${round}` } }),
        signingClient(app, token)(SUBMIT_WITH_REVISION, { values: [{ fieldId: built.fields['ada-signature'], value: typedSignature }], complete: true, revision: 0 }),
      ]);
      const [row] = await app.orm.em
        .fork()
        .execute<{ status: string; revision: number; completed_at: Date | null; label: string | null; value: unknown }[]>(
          `select e.status, e.revision, r.completed_at, f.label, f.value from envelope e join recipient r on r.envelope_id = e.id join field f on f.recipient_id = r.id where e.id = ?`,
          [built.envelopeId],
        );
      const corrected = correction.status === 200;
      const submitted = submission.errors === undefined;
      expect(corrected !== submitted, `round ${round}: ${correction.status} ${JSON.stringify(submission.errors)}`).toBe(true);
      if (corrected) {
        wins.correction += 1;
        expect(firstErrorName(submission)).toBe('Signing.EnvelopeChanged');
        expect(row).toMatchObject({ status: 'sent', revision: 1, completed_at: null, label: `Round ${round}`, value: null });
      } else {
        wins.submission += 1;
        expect(correction.status).toBe(409);
        // A completed recipient, or by then a finalized envelope: either way the correction's own refusal.
        expect(['Recipient.AlreadyCompleted', 'Envelope.NotDraft']).toContain(correction.body.error.name);
        expect(row!.revision).toBe(0);
        expect(row!.completed_at).not.toBeNull();
        expect(row!.label).not.toBe(`Round ${round}`);
        expect(row!.status).toBe('finalized');
      }
      expect(await auditOf(built.envelopeId, 'envelope.corrected')).toHaveLength(corrected ? 1 : 0);
      expect(await auditOf(built.envelopeId, 'recipient.completed')).toHaveLength(submitted ? 1 : 0);
    }
    expect(wins.correction + wins.submission).toBe(20);
  });
});

describe('envelope.corrected', () => {
  it('reaches subscriptions (team and signing page) and webhooks with the revision', async () => {
    const team = await seedTeam(app);
    const receiver = await startRecordingServer(() => 200, '/hooks');
    try {
      const created = await clients(team).rest.post('/webhooks', { url: `${receiver.url}`, eventTypes: ['envelope.corrected'] });
      expect(created.status, JSON.stringify(created.body)).toBe(200);
      const built = await sentEnvelope(team, twoSigners);
      const token = await tokenFor(app, built.envelopeId, built.recipients.ada);
      const events = subscribe(app, 'ws', { apiKey: team.apiKey }, `subscription($e: ID!) { envelopeEvents(envelopeId: $e) { type sequence revision } }`, { e: built.envelopeId });
      const page = subscribe(app, 'ws', { signingToken: token }, `subscription { signingSessionChanged { type revision } }`);
      await untilWatching(app, 2);
      const changed = await clients(team).rest.patch(`/envelopes/${built.envelopeId}/fields/${built.fields['bob-signature']}`, { field: { label: 'Bob signs here' } });
      expect(changed.status).toBe(200);

      const seen = await events.waitFor(2);
      expect(seen.map((result) => result.data.envelopeEvents)).toEqual([
        expect.objectContaining({ type: 'field.updated', revision: null }),
        expect.objectContaining({ type: 'envelope.corrected', revision: 1 }),
      ]);
      const pageSeen = await page.waitFor(1);
      expect(pageSeen[0]!.data.signingSessionChanged).toEqual({ type: 'envelope.corrected', revision: 1 });
      // Replayed from the trail, it carries the same revision.
      const replay = subscribe(app, 'ws', { apiKey: team.apiKey }, `subscription($e: ID!) { envelopeEvents(envelopeId: $e, afterSequence: 0) { type revision } }`, { e: built.envelopeId });
      const replayed = await replay.waitFor(1);
      await eventuallyFind(replay, 'envelope.corrected');
      expect(replay.results.map((result) => result.data.envelopeEvents).find((event: any) => event.type === 'envelope.corrected')).toEqual({ type: 'envelope.corrected', revision: 1 });
      expect(replayed.length).toBeGreaterThan(0);
      await Promise.all([events.close(), page.close(), replay.close()]);

      await webhookWorkerFor(app, team.teamId, { dependencies: { config: { ...app.dependencies.config, webhookAllowPrivate: true } } }).drain();
      expect(receiver.received).toHaveLength(1);
      expect(receiver.received[0]!.json).toMatchObject({ type: 'envelope.corrected', envelopeId: built.envelopeId, data: { revision: 1, changes: ['field.updated'] } });
    } finally {
      await receiver.close();
    }
  });
});

/** Waits until a watcher has seen an event of `type` (replays arrive one by one). */
async function eventuallyFind(watcher: ReturnType<typeof subscribe>, type: string) {
  for (let count = watcher.results.length; ; count += 1) {
    if (watcher.results.some((result) => result.data?.envelopeEvents?.type === type)) return;
    await watcher.waitFor(count + 1);
  }
}
