import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signDownloadToken } from '../src/domain/artefact/download-url.ts';
import { FINAL_COPY_LINK_TTL_SECONDS, signFinalCopyLink, verifyFinalCopyLink } from '../src/domain/artefact/final-copy-link.ts';
import { makePdf } from './fixtures/pdfs.ts';
import { uploadDocument } from './helpers/envelopes.ts';
import { firstErrorName, restClient, type SeededTeam, seedTeam, startTestApp, type TestApp } from './helpers/harness.ts';
import { buildEnvelope, DELEGATE_MUTATION, invitationsOf, type RecipientSpec, signAndComplete, signingClient, tokenFor } from './helpers/signing.ts';

let app: TestApp;
let team: SeededTeam;
beforeAll(async () => {
  app = await startTestApp();
  team = await seedTeam(app);
}, 60_000);
afterAll(async () => {
  await app?.close();
});

const FINAL_COPY = '{ signingFinalCopy { url expiresAt } }';
/** The URL's path on the test server (PUBLIC_URL names localhost; the server listens on 127.0.0.1). */
const local = (url: string) => `${app.url}${new URL(url).pathname}`;

async function sent(recipients: RecipientSpec[], options: { extraDocument?: boolean } = {}) {
  const built = await buildEnvelope(app, team.apiKey, { name: 'Sözleşme', recipients });
  if (options.extraDocument) expect((await uploadDocument(app, team.apiKey, built.envelopeId, { bytes: await makePdf({ pages: 1 }) })).status).toBe(200);
  const answer = await restClient(app, team.apiKey).put(`/envelopes/${built.envelopeId}/send`);
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  return built;
}

async function finalCopyUrl(token: string | undefined) {
  return signingClient(app, token)(FINAL_COPY);
}

async function downloads(envelopeId: string) {
  const events = (await restClient(app, team.apiKey).get(`/envelopes/${envelopeId}/audit`)).body.payload.events as any[];
  return events.filter((event) => event.type === 'artefact.downloaded');
}

describe('a recipient’s final copy', () => {
  it('is handed to the (now dead) signing link of a finalized envelope as a short-lived URL; the route streams the sealed PDF and records the agent', async () => {
    const built = await sent([{ identifier: 'ada' }, { identifier: 'bob' }]);
    const adaToken = await tokenFor(app, built.envelopeId, built.recipients.ada);
    // Before the envelope is finalized: refused by name, with the status.
    const early = await finalCopyUrl(adaToken);
    expect(firstErrorName(early)).toBe('Envelope.NotFinalized');
    expect(early.errors![0].extensions.context.status).toBe('sent');
    for (const identifier of ['ada', 'bob']) expect((await signAndComplete(app, await tokenFor(app, built.envelopeId, built.recipients[identifier]))).errors).toBeUndefined();

    const answer = await finalCopyUrl(adaToken);
    expect(answer.errors).toBeUndefined();
    const link = answer.data.signingFinalCopy;
    expect(Date.parse(link.expiresAt) - app.dependencies.clock.now().getTime()).toBeLessThanOrEqual(300_000);
    expect(new URL(link.url).pathname).toMatch(/^\/api\/v1\/key\/final-copy\/[\w-]+\.[\w-]+$/);
    const fetched = await fetch(local(link.url));
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get('content-type')).toBe('application/pdf');
    expect(fetched.headers.get('x-artefact-sealed')).toBe('true');
    expect(fetched.headers.get('content-disposition')).toMatch(/^attachment; filename=/);
    const bytes = Buffer.from(await fetched.arrayBuffer());
    expect(bytes.subarray(0, 5).toString()).toBe('%PDF-');
    // The same sealed file the team downloads.
    const teamCopy = await fetch(`${app.url}/api/v1/key/envelopes/${built.envelopeId}/documents/${built.documentId}/pdf`, { headers: { 'x-service-api-key': team.apiKey } });
    expect(Buffer.compare(Buffer.from(await teamCopy.arrayBuffer()), bytes)).toBe(0);
    const adaAgent = (await invitationsOf(app, built.envelopeId)).find((invitation) => invitation.recipientId === built.recipients.ada)!.agentId;
    const recorded = await downloads(built.envelopeId);
    expect(recorded[0]).toMatchObject({ actor: { type: 'agent', id: adaAgent }, details: { format: 'pdf', sealed: true } });

    // Altered or expired: refused by name.
    const altered = local(link.url).replace(/.$/, (last) => (last === 'A' ? 'B' : 'A'));
    const refused = await fetch(altered);
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as any).error).toMatchObject({ name: 'Download.InvalidLink', context: { reason: 'malformed' } });
    app.dependencies.clock.advance(301);
    const expired = await fetch(local(link.url));
    expect(expired.status).toBe(403);
    expect(((await expired.json()) as any).error).toMatchObject({ name: 'Download.InvalidLink', context: { reason: 'expired' } });
  });

  it('works for the completion mail’s long-lived link, as a ZIP for several documents; a team download token does not pass for one', async () => {
    const built = await sent([{ identifier: 'ada' }], { extraDocument: true });
    const invitation = (await invitationsOf(app, built.envelopeId))[0]!;
    expect((await signAndComplete(app, invitation.token)).errors).toBeUndefined();
    const now = app.dependencies.clock.now();
    const signed = signFinalCopyLink(
      app.dependencies.auditKey,
      { envelopeId: built.envelopeId, recipientId: built.recipients.ada, agentId: invitation.agentId },
      new Date(now.getTime() + FINAL_COPY_LINK_TTL_SECONDS * 1000),
    );
    expect(FINAL_COPY_LINK_TTL_SECONDS).toBe(30 * 24 * 3600);
    app.dependencies.clock.advance(29 * 24 * 3600);
    expect(verifyFinalCopyLink(app.dependencies.auditKey, signed, app.dependencies.clock.now()).agentId).toBe(invitation.agentId);
    const zip = await fetch(`${app.url}/api/v1/key/final-copy/${signed}`);
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    expect(
      Buffer.from(await zip.arrayBuffer())
        .subarray(0, 2)
        .toString(),
    ).toBe('PK');
    expect((await downloads(built.envelopeId)).at(-1)).toMatchObject({ actor: { type: 'agent', id: invitation.agentId }, details: { format: 'zip' } });

    // A team's signed download URL is MACed under another key: it is no final-copy link.
    const teamToken = signDownloadToken(
      app.dependencies.auditKey,
      { teamId: team.teamId, workspaceId: team.workspaceId, apiKeyId: team.keyId },
      { envelopeId: built.envelopeId, documentId: null },
      new Date(now.getTime() + 60 * 24 * 3600 * 1000),
    );
    const crossed = await fetch(`${app.url}/api/v1/key/final-copy/${teamToken}`);
    expect(crossed.status).toBe(403);
    expect(((await crossed.json()) as any).error.name).toBe('Download.InvalidLink');
    app.dependencies.clock.advance(2 * 24 * 3600);
    const late = await fetch(`${app.url}/api/v1/key/final-copy/${signed}`);
    expect(((await late.json()) as any).error).toMatchObject({ name: 'Download.InvalidLink', context: { reason: 'expired' } });
    const garbage = await fetch(`${app.url}/api/v1/key/final-copy/not-a-link`);
    expect(garbage.status).toBe(403);
    expect(((await garbage.json()) as any).error.name).toBe('Download.InvalidLink');
  });

  it('is refused for a link whose role was delegated away before the envelope closed, for a voided envelope, and without or with an unknown link', async () => {
    const built = await sent([{ identifier: 'boss', type: 'delegator' }]);
    const bossToken = await tokenFor(app, built.envelopeId, built.recipients.boss);
    expect((await signingClient(app, bossToken)(DELEGATE_MUTATION, { person: { name: 'Zeynep Çelik', email: 'zeynep@example.com' } })).errors).toBeUndefined();
    const zeynepToken = (await invitationsOf(app, built.envelopeId)).at(-1)!.token;
    expect((await signAndComplete(app, zeynepToken)).errors).toBeUndefined();
    expect(firstErrorName(await finalCopyUrl(bossToken))).toBe('Signing.InvalidToken');
    expect((await finalCopyUrl(zeynepToken)).errors).toBeUndefined();

    // A link signed for the agent that lost the role is refused too.
    const bossAgent = (await invitationsOf(app, built.envelopeId))[0]!.agentId;
    const expiresAt = new Date(app.dependencies.clock.now().getTime() + 3600_000);
    const forBoss = signFinalCopyLink(app.dependencies.auditKey, { envelopeId: built.envelopeId, recipientId: built.recipients.boss, agentId: bossAgent }, expiresAt);
    expect(((await (await fetch(`${app.url}/api/v1/key/final-copy/${forBoss}`)).json()) as any).error.name).toBe('Download.InvalidLink');

    const voided = await sent([{ identifier: 'ada' }]);
    const adaToken = await tokenFor(app, voided.envelopeId, voided.recipients.ada);
    expect((await restClient(app, team.apiKey).post(`/envelopes/${voided.envelopeId}/void`, { reason: 'Wrong' })).status).toBe(200);
    const answer = await finalCopyUrl(adaToken);
    expect(firstErrorName(answer)).toBe('Envelope.NotFinalized');
    expect(answer.errors![0].extensions.context.status).toBe('voided');
    const adaAgent = (await invitationsOf(app, voided.envelopeId))[0]!.agentId;
    const forVoided = signFinalCopyLink(app.dependencies.auditKey, { envelopeId: voided.envelopeId, recipientId: voided.recipients.ada, agentId: adaAgent }, expiresAt);
    const refused = await fetch(`${app.url}/api/v1/key/final-copy/${forVoided}`);
    expect(refused.status).toBe(409);
    expect(((await refused.json()) as any).error).toMatchObject({ name: 'Envelope.NotFinalized', context: { status: 'voided' } });

    expect(firstErrorName(await finalCopyUrl(undefined))).toBe('Signing.MissingToken');
    expect(firstErrorName(await finalCopyUrl('sgn_not_a_link'))).toBe('Signing.InvalidToken');
  });
});
