import { readCallerTeam, type TeamData } from '../../domain/team/team.read.ts';
import { readTeamSettings, TEAM_NOTICE_EVENTS, type TeamLogo, type TeamSettingsData, type TrustServiceData, updateTeamSettings } from '../../domain/team/team-settings.ts';
import { builder } from '../builder.ts';

export const TeamType = builder.objectRef<TeamData>('Team').implement({
  description: 'A team: owns envelopes, templates and contacts; an API key acts for exactly one team.',
  fields: (t) => ({
    id: t.exposeID('id'),
    name: t.exposeString('name'),
    workspaceId: t.id({ description: 'The workspace the team belongs to.', resolve: (team) => team.workspaceId }),
    createdAt: t.field({ type: 'DateTime', resolve: (team) => team.createdAt }),
  }),
});

builder.queryField('viewer', (t) =>
  t.field({
    type: TeamType,
    description: 'The team the API key in X-Service-Api-Key belongs to.',
    resolve: (_root, _args, context) => readCallerTeam(context),
  }),
);

// The team's settings (issue 21, 24): one document, read and changed as a whole (REST: GET/PATCH /team/settings).
const TeamEmbeddingSettingsType = builder.objectRef<TeamSettingsData['embedding']>('TeamEmbeddingSettings').implement({
  description: 'Embedded signing.',
  fields: (t) => ({
    frameOrigins: t.stringList({
      nullable: true,
      description: 'Origins whose pages may frame this team’s signing URLs; null: SIGNING_FRAME_ANCESTORS decides.',
      resolve: (embedding) => embedding.frameOrigins,
    }),
  }),
});

const TeamArtefactSettingsType = builder.objectRef<TeamSettingsData['artefacts']>('TeamArtefactSettings').implement({
  description: 'The sealed documents.',
  fields: (t) => ({
    stamp: t.boolean({
      nullable: true,
      description: 'The default of new envelopes’ stamp (the envelope id in each sealed page’s margin, a caption under each signature); null: on.',
      resolve: (section) => section.stamp,
    }),
  }),
});

const TeamNotificationSettingsType = builder.objectRef<TeamSettingsData['notifications']>('TeamNotificationSettings').implement({
  description: 'Mails to the team about its envelopes.',
  fields: (t) => ({
    emails: t.stringList({ nullable: true, description: 'Where the team’s notices go; null: nowhere.', resolve: (section) => section.emails }),
    events: t.stringList({
      nullable: true,
      description: `Which events they get (${TEAM_NOTICE_EVENTS.join(', ')}); null: every event. bulk_send_completed: a bulk send finished, with its counts.`,
      resolve: (section) => section.events,
    }),
    locale: t.string({ nullable: true, description: 'The notices’ language (en-US, tr-TR); null: en-US.', resolve: (section) => section.locale }),
  }),
});

const TeamLogoType = builder.objectRef<TeamLogo>('TeamLogo').implement({
  description: 'The team’s logo, served by the service at a stable URL.',
  fields: (t) => ({
    url: t.exposeString('url', { description: 'Where the service serves it (content-addressed: cacheable for good).' }),
    sha256: t.exposeString('sha256'),
    contentType: t.exposeString('contentType'),
    width: t.exposeInt('width'),
    height: t.exposeInt('height'),
    byteSize: t.exposeInt('byteSize'),
  }),
});

const TeamBrandingSettingsType = builder.objectRef<TeamSettingsData['branding']>('TeamBrandingSettings').implement({
  description: 'How the team’s mails and signing pages look.',
  fields: (t) => ({
    logo: t.field({ type: TeamLogoType, nullable: true, resolve: (section) => section.logo }),
    accentColor: t.string({ nullable: true, description: 'Buttons and accents, #rrggbb.', resolve: (section) => section.accentColor }),
    footer: t.string({ nullable: true, description: 'A line under every mail and on the signing page.', resolve: (section) => section.footer }),
  }),
});

const TrustServiceType = builder.objectRef<TrustServiceData>('TrustService').implement({
  description: 'A trust service provider speaking the CSC API v2, where the team’s advanced and qualified signers sign (issue 35). Its client secret is never read back.',
  fields: (t) => ({
    id: t.exposeString('id'),
    name: t.exposeString('name'),
    baseUrl: t.exposeString('baseUrl', { description: 'The provider’s CSC API base (…/csc/v2).' }),
    clientId: t.exposeString('clientId'),
    clientSecretSet: t.exposeBoolean('clientSecretSet', { description: 'Whether a client secret is stored (it is never answered).' }),
    levels: t.stringList({ description: 'advanced, qualified: the levels its certificates give.', resolve: (service) => service.levels }),
  }),
});

const TeamSettingsType = builder.objectRef<TeamSettingsData>('TeamSettings').implement({
  description: 'The team’s settings: every section, null where the team set nothing.',
  fields: (t) => ({
    displayName: t.string({ nullable: true, description: 'The From name and subject of the team’s mails, and the signing page’s sender.', resolve: (settings) => settings.displayName }),
    replyTo: t.string({ nullable: true, description: 'The Reply-To of the team’s mails.', resolve: (settings) => settings.replyTo }),
    notifications: t.field({ type: TeamNotificationSettingsType, resolve: (settings) => settings.notifications }),
    branding: t.field({ type: TeamBrandingSettingsType, resolve: (settings) => settings.branding }),
    embedding: t.field({ type: TeamEmbeddingSettingsType, resolve: (settings) => settings.embedding }),
    artefacts: t.field({ type: TeamArtefactSettingsType, resolve: (settings) => settings.artefacts }),
    trustServices: t.field({ type: [TrustServiceType], resolve: (settings) => settings.trustServices }),
    version: t.exposeInt('version', { description: 'How many times the settings were changed (0: never).' }),
  }),
});

const TeamEmbeddingSettingsInput = builder.inputType('TeamEmbeddingSettingsInput', {
  fields: (t) => ({
    frameOrigins: t.stringList({ required: false, description: 'Replaces the list; null clears it (SIGNING_FRAME_ANCESTORS then decides).' }),
  }),
});

const TeamArtefactSettingsInput = builder.inputType('TeamArtefactSettingsInput', {
  fields: (t) => ({
    stamp: t.boolean({ required: false, description: 'The default of new envelopes’ stamp; null: on.' }),
  }),
});

const TeamNotificationSettingsInput = builder.inputType('TeamNotificationSettingsInput', {
  fields: (t) => ({
    emails: t.stringList({ required: false, description: 'Replaces the addresses (at most 10); null: none.' }),
    events: t.stringList({ required: false, description: `Replaces the events (${TEAM_NOTICE_EVENTS.join(', ')}); null: every event.` }),
    locale: t.string({ required: false, description: 'en-US or tr-TR; null: en-US.' }),
  }),
});

const TeamLogoInput = builder.inputType('TeamLogoInput', {
  fields: (t) => ({
    data: t.string({ required: true, description: 'A PNG or JPEG in base64: at most 256 KiB, at most 1024×1024 pixels (checked by content).' }),
  }),
});

const TeamBrandingSettingsInput = builder.inputType('TeamBrandingSettingsInput', {
  fields: (t) => ({
    logo: t.field({ type: TeamLogoInput, required: false, description: 'A new logo; null removes it.' }),
    accentColor: t.string({ required: false, description: '#rrggbb; null: the service’s colour.' }),
    footer: t.string({ required: false, description: 'Plain text, at most 500 characters; null: none.' }),
  }),
});

const TrustServiceInput = builder.inputType('TrustServiceInput', {
  fields: (t) => ({
    id: t.string({ required: true, description: 'Your slug for it; recipients name it as trustServiceId.' }),
    name: t.string({ required: true }),
    baseUrl: t.string({ required: true, description: 'The provider’s CSC API base, e.g. https://tsp.example/csc/v2.' }),
    clientId: t.string({ required: true, description: 'The OAuth client the provider registered for this service (redirect URI: PUBLIC_URL/sign/trust-service/callback).' }),
    clientSecret: t.string({ required: false, description: 'Required for a new id; left out, the stored one stays. Never read back.' }),
    levels: t.stringList({ required: true, description: 'advanced, qualified.' }),
  }),
});

const TeamSettingsInput = builder.inputType('TeamSettingsInput', {
  description: 'The keys and sections to change; those left out stay as they are, null clears one.',
  fields: (t) => ({
    displayName: t.string({ required: false, description: '1 to 100 characters; null: the mails’ From as configured.' }),
    replyTo: t.string({ required: false, description: 'An email address; null: none.' }),
    notifications: t.field({ type: TeamNotificationSettingsInput, required: false }),
    branding: t.field({ type: TeamBrandingSettingsInput, required: false }),
    embedding: t.field({ type: TeamEmbeddingSettingsInput, required: false }),
    artefacts: t.field({ type: TeamArtefactSettingsInput, required: false }),
    trustServices: t.field({ type: [TrustServiceInput], required: false, description: 'Replaces the list whole; null: none.' }),
  }),
});

/** Only the keys the caller wrote (null included): a key left out stays as it is. */
function given(object: object): Record<string, unknown> {
  return Object.fromEntries(Object.entries(object).filter(([, value]) => value !== undefined));
}

builder.queryField('teamSettings', (t) =>
  t.field({
    type: TeamSettingsType,
    description: 'The calling team’s settings (REST: GET /team/settings).',
    resolve: (_root, _args, context) => readTeamSettings(context),
  }),
);

builder.mutationField('updateTeamSettings', (t) =>
  t.field({
    type: TeamSettingsType,
    // Like every mutation: a refusal nulls this field only, never a sibling mutation's answer.
    nullable: true,
    description: 'Changes the calling team’s settings (REST: PATCH /team/settings): the keys given replace the stored ones. Recorded as team.settings_updated.',
    args: { input: t.arg({ type: TeamSettingsInput, required: true }) },
    resolve: (_root, args, context) => {
      // A key left out stays; a key given as null is cleared: only what the caller wrote is passed on.
      const input: Record<string, unknown> = {};
      for (const [key, value] of Object.entries(args.input)) {
        if (value === undefined) continue;
        input[key] =
          value !== null && typeof value === 'object' && !Array.isArray(value)
            ? given(value)
            : Array.isArray(value)
              ? value.map((entry) => (entry !== null && typeof entry === 'object' ? given(entry) : entry))
              : value;
      }
      return updateTeamSettings(context, { input });
    },
  }),
);
