/**
 * The mails' words, in every locale an agent may have (agent.entity.ts `locales`): each template
 * is a full translation, so a tr-TR mail has no English in it. User values (names, envelope
 * names, reasons) are only ever inserted through `escapeHtml` in the HTML part; header values
 * are made one line by the mailer.
 */
import { escapeHtml } from '../../shared/html.ts';
import { type Locale, locales } from '../recipient/agent.entity.ts';

export type MailKind = 'invitation' | 'your_turn' | 'delegated' | 'reminder' | 'voided' | 'declined' | 'expired' | 'handed_over' | 'completed';

export type MailValues = {
  name: string | null;
  envelopeName: string;
  /** The signing link (invitation, your turn, reminder). */
  link?: string;
  /** When the envelope expires (ISO), if it does. */
  expiresAt?: string | null;
  /** The void or decline reason. */
  reason?: string | null;
  /** Who handed the role on (a delegated invitation). */
  from?: string | null;
  /** Who the role was handed to (the hand-over notice to the delegator). */
  handedTo?: string | null;
  /** The signed copies are attached (completion). */
  attached?: boolean;
  /** The sending team's name and look (team settings); absent: the service's own. */
  brand?: MailBrand;
};

/**
 * The sending team's branding as a mail shows it: its display name (subjects, the logo's alt
 * text), the logo as an inline attachment (`cid:`), the accent colour of the button and a footer
 * line. Every value is escaped where it is inserted.
 */
export type MailBrand = { displayName: string | null; logoCid: string | null; accentColor: string | null; footer: string | null };

const DEFAULT_ACCENT = '#0b5cad';

type Words = {
  subject: (envelope: string) => string;
  /** The subject naming the sending team (its display name), for mails that ask something of the person. */
  subjectFrom?: (sender: string, envelope: string) => string;
  greeting: (name: string | null) => string;
  lead: (envelope: string, values: MailValues) => string;
  /** A line said when the signed copies are attached. */
  attached?: string;
  action?: string;
  expires?: (date: string) => string;
  reason?: string;
  footer: string;
};

const EN: Record<MailKind, Words> = {
  invitation: {
    subject: (envelope) => `Please sign: ${envelope}`,
    subjectFrom: (sender, envelope) => `${sender} sent you “${envelope}” to sign`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `You have been asked to review and sign “${envelope}”.`,
    action: 'Review and sign',
    expires: (date) => `This link can be used until ${date}.`,
    footer: 'If you did not expect this message, you can ignore it. Do not forward it: the link is yours alone.',
  },
  your_turn: {
    subject: (envelope) => `Your turn to sign: ${envelope}`,
    subjectFrom: (sender, envelope) => `${sender}: your turn to sign “${envelope}”`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `Everyone before you has signed “${envelope}”. It is now your turn.`,
    action: 'Review and sign',
    expires: (date) => `This link can be used until ${date}.`,
    footer: 'If you did not expect this message, you can ignore it. Do not forward it: the link is yours alone.',
  },
  delegated: {
    subject: (envelope) => `Please sign: ${envelope}`,
    subjectFrom: (sender, envelope) => `${sender} sent you “${envelope}” to sign`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope, values) => `${values.from ?? 'A recipient'} asked you to review and sign “${envelope}” in their place.`,
    action: 'Review and sign',
    expires: (date) => `This link can be used until ${date}.`,
    footer: 'If you did not expect this message, you can ignore it. Do not forward it: the link is yours alone.',
  },
  reminder: {
    subject: (envelope) => `Reminder: “${envelope}” is waiting for your signature`,
    subjectFrom: (sender, envelope) => `Reminder from ${sender}: “${envelope}” is waiting for your signature`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `“${envelope}” is still waiting for your signature.`,
    action: 'Review and sign',
    expires: (date) => `This link can be used until ${date}.`,
    footer: 'If you did not expect this message, you can ignore it. Do not forward it: the link is yours alone.',
  },
  voided: {
    subject: (envelope) => `Cancelled: ${envelope}`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `The sender cancelled “${envelope}”. Nothing more is needed from you, and its links no longer work.`,
    reason: 'Reason given:',
    footer: 'This message was sent automatically.',
  },
  declined: {
    subject: (envelope) => `Declined: ${envelope}`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `A recipient declined to sign “${envelope}”, so it was closed. Nothing more is needed from you, and its links no longer work.`,
    reason: 'Reason given:',
    footer: 'This message was sent automatically.',
  },
  expired: {
    subject: (envelope) => `Expired: ${envelope}`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `“${envelope}” expired before everyone had signed. Nothing more is needed from you, and its links no longer work.`,
    footer: 'This message was sent automatically.',
  },
  handed_over: {
    subject: (envelope) => `Handed over: ${envelope}`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope, values) =>
      `You handed “${envelope}” over to ${values.handedTo ?? 'another person'}, who has been invited to sign in your place. Nothing more is needed from you, and your link no longer works.`,
    footer: 'This message was sent automatically.',
  },
  completed: {
    subject: (envelope) => `Completed: ${envelope}`,
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (envelope) => `Everyone has signed “${envelope}”. The signed and sealed copy is ready.`,
    attached: 'The signed documents are attached to this message.',
    action: 'Download the signed copy',
    expires: (date) => `This download link works until ${date}.`,
    footer: 'This message was sent automatically. Keep the signed copy for your records.',
  },
};

const TR: Record<MailKind, Words> = {
  invitation: {
    subject: (envelope) => `İmzanız bekleniyor: ${envelope}`,
    subjectFrom: (sender, envelope) => `${sender} size imzalamanız için “${envelope}” belgesini gönderdi`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `“${envelope}” belgesini incelemeniz ve imzalamanız istendi.`,
    action: 'İncele ve imzala',
    expires: (date) => `Bu bağlantı ${date} tarihine kadar kullanılabilir.`,
    footer: 'Bu iletiyi beklemiyorsanız dikkate almayabilirsiniz. Lütfen iletmeyin: bağlantı yalnızca size aittir.',
  },
  your_turn: {
    subject: (envelope) => `İmza sırası sizde: ${envelope}`,
    subjectFrom: (sender, envelope) => `${sender}: “${envelope}” için imza sırası sizde`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `Sizden önceki herkes “${envelope}” belgesini imzaladı. Şimdi sıra sizde.`,
    action: 'İncele ve imzala',
    expires: (date) => `Bu bağlantı ${date} tarihine kadar kullanılabilir.`,
    footer: 'Bu iletiyi beklemiyorsanız dikkate almayabilirsiniz. Lütfen iletmeyin: bağlantı yalnızca size aittir.',
  },
  delegated: {
    subject: (envelope) => `İmzanız bekleniyor: ${envelope}`,
    subjectFrom: (sender, envelope) => `${sender} size imzalamanız için “${envelope}” belgesini gönderdi`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope, values) => `${values.from ?? 'Bir alıcı'}, “${envelope}” belgesini kendi yerine incelemenizi ve imzalamanızı istedi.`,
    action: 'İncele ve imzala',
    expires: (date) => `Bu bağlantı ${date} tarihine kadar kullanılabilir.`,
    footer: 'Bu iletiyi beklemiyorsanız dikkate almayabilirsiniz. Lütfen iletmeyin: bağlantı yalnızca size aittir.',
  },
  reminder: {
    subject: (envelope) => `Hatırlatma: “${envelope}” imzanızı bekliyor`,
    subjectFrom: (sender, envelope) => `${sender} hatırlatıyor: “${envelope}” imzanızı bekliyor`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `“${envelope}” hâlâ imzanızı bekliyor.`,
    action: 'İncele ve imzala',
    expires: (date) => `Bu bağlantı ${date} tarihine kadar kullanılabilir.`,
    footer: 'Bu iletiyi beklemiyorsanız dikkate almayabilirsiniz. Lütfen iletmeyin: bağlantı yalnızca size aittir.',
  },
  voided: {
    subject: (envelope) => `İptal edildi: ${envelope}`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `Gönderen “${envelope}” belgesini iptal etti. Sizden başka bir işlem beklenmiyor ve bağlantıları artık çalışmıyor.`,
    reason: 'Belirtilen neden:',
    footer: 'Bu ileti otomatik olarak gönderildi.',
  },
  declined: {
    subject: (envelope) => `Reddedildi: ${envelope}`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `Bir alıcı “${envelope}” belgesini imzalamayı reddetti, bu yüzden belge kapatıldı. Sizden başka bir işlem beklenmiyor ve bağlantıları artık çalışmıyor.`,
    reason: 'Belirtilen neden:',
    footer: 'Bu ileti otomatik olarak gönderildi.',
  },
  expired: {
    subject: (envelope) => `Süresi doldu: ${envelope}`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `“${envelope}” belgesinin süresi herkes imzalamadan doldu. Sizden başka bir işlem beklenmiyor ve bağlantıları artık çalışmıyor.`,
    footer: 'Bu ileti otomatik olarak gönderildi.',
  },
  handed_over: {
    subject: (envelope) => `Devredildi: ${envelope}`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope, values) =>
      `“${envelope}” belgesini ${values.handedTo ?? 'başka bir kişiye'} devrettiniz; sizin yerinize imzalamaya davet edildi. Sizden başka bir işlem beklenmiyor ve bağlantınız artık çalışmıyor.`,
    footer: 'Bu ileti otomatik olarak gönderildi.',
  },
  completed: {
    subject: (envelope) => `Tamamlandı: ${envelope}`,
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (envelope) => `Herkes “${envelope}” belgesini imzaladı. İmzalı ve mühürlü kopya hazır.`,
    attached: 'İmzalı belgeler bu iletinin ekinde yer alıyor.',
    action: 'İmzalı kopyayı indir',
    expires: (date) => `Bu indirme bağlantısı ${date} tarihine kadar çalışır.`,
    footer: 'Bu ileti otomatik olarak gönderildi. İmzalı kopyayı kayıtlarınız için saklayın.',
  },
};

const WORDS: Record<Locale, Record<MailKind, Words>> = { 'en-US': EN, 'tr-TR': TR };

/** The agent's locale when it is one we write in, else en-US. */
export function mailLocale(locale: string | null | undefined): Locale {
  return (locales as readonly string[]).includes(locale ?? '') ? (locale as Locale) : 'en-US';
}

function formatDate(iso: string, locale: Locale): string {
  return `${new Intl.DateTimeFormat(locale, { dateStyle: 'long', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(iso))} UTC`;
}

/** The subject: naming the sending team when it has a display name and the mail asks something of the person. */
function subjectOf(words: Words, values: MailValues): string {
  const sender = values.brand?.displayName;
  return sender && words.subjectFrom ? words.subjectFrom(sender, values.envelopeName) : words.subject(values.envelopeName);
}

export function renderMail(kind: MailKind, locale: Locale, values: MailValues): { subject: string; text: string; html: string } {
  const words = WORDS[locale][kind];
  const expires = words.expires && values.expiresAt ? words.expires(formatDate(values.expiresAt, locale)) : null;
  const reason = words.reason && values.reason ? values.reason : null;
  const lead = words.lead(values.envelopeName, values);
  const attached = words.attached && values.attached ? words.attached : null;
  const subject = subjectOf(words, values);
  return mailBody(locale, {
    subject,
    paragraphs: [words.greeting(values.name), lead, ...(reason ? [`${words.reason} ${reason}`] : []), ...(attached ? [attached] : [])],
    action: words.action && values.link ? { label: words.action, link: values.link } : null,
    after: expires ? [expires] : [],
    footer: words.footer,
    brand: values.brand,
  });
}

/**
 * One mail's text and HTML parts from plain strings: every value is escaped here, once, so no
 * template can forget it. The team's logo leads (by `cid:`), its colour is the button's, its
 * footer line closes the mail above the service's own.
 */
function mailBody(
  locale: Locale,
  content: { subject: string; paragraphs: string[]; action: { label: string; link: string } | null; after: string[]; footer: string; brand?: MailBrand },
): { subject: string; text: string; html: string } {
  const brand = content.brand;
  const text = [
    ...content.paragraphs.flatMap((paragraph, index) => (index === 0 ? [paragraph] : ['', paragraph])),
    ...(content.action ? ['', `${content.action.label}: ${content.action.link}`] : []),
    ...content.after.flatMap((line) => ['', line]),
    '',
    '--',
    ...(brand?.footer ? [brand.footer] : []),
    content.footer,
    '',
  ].join('\n');
  const e = escapeHtml;
  // Settings allow only #rrggbb; escaped all the same, as every value inserted here.
  const accent = brand?.accentColor && /^#[0-9a-f]{6}$/i.test(brand.accentColor) ? brand.accentColor : DEFAULT_ACCENT;
  const logo = brand?.logoCid ? `<p><img src="cid:${e(brand.logoCid)}" alt="${e(brand.displayName ?? '')}" style="max-height: 64px; max-width: 240px;"></p>\n` : '';
  const html = `<!doctype html>
<html lang="${e(locale)}"><head><meta charset="utf-8"><title>${e(content.subject)}</title></head>
<body style="font-family: Arial, sans-serif; line-height: 1.5; color: #1f2328;">
${logo}${content.paragraphs.map((paragraph) => `<p>${e(paragraph)}</p>\n`).join('')}${
  content.action
    ? `<p><a href="${e(content.action.link)}" style="display: inline-block; padding: 10px 18px; background: ${e(accent)}; color: #ffffff; text-decoration: none; border-radius: 4px;">${e(content.action.label)}</a></p>\n`
    : ''
}${content.after.map((line) => `<p>${e(line)}</p>\n`).join('')}${brand?.footer ? `<p style="color: #57606a; font-size: 12px;">${e(brand.footer)}</p>\n` : ''}<p style="color: #57606a; font-size: 12px;">${e(content.footer)}</p>
</body></html>
`;
  return { subject: content.subject, text, html };
}

/** The team's own notices (team settings, issue 24): what happened to one of its envelopes. */
export type TeamNoticeEventName = 'completed' | 'declined' | 'voided' | 'expired' | 'delivery_failed' | 'send_failed';

export type TeamNoticeValues = {
  envelopeName: string;
  envelopeId: string;
  reason?: string | null;
  person?: { name: string | null; email: string | null; phone: string | null } | null;
  channel?: string | null;
  kind?: string | null;
  error?: string | null;
  /** completed: where the team fetches the sealed copy with its API key. */
  link?: string;
  attached?: boolean;
  brand?: MailBrand;
};

type TeamWords = {
  subject: Record<TeamNoticeEventName, (envelope: string) => string>;
  lead: Record<TeamNoticeEventName, (values: TeamNoticeValues, who: string) => string>;
  reason: string;
  why: string;
  attached: string;
  action: string;
  someone: string;
  channels: Record<string, string>;
  kinds: Record<string, string>;
  id: (id: string) => string;
  footer: string;
};

const TEAM_WORDS: Record<Locale, TeamWords> = {
  'en-US': {
    subject: {
      completed: (envelope) => `Completed: ${envelope}`,
      declined: (envelope) => `Declined: ${envelope}`,
      voided: (envelope) => `Voided: ${envelope}`,
      expired: (envelope) => `Expired: ${envelope}`,
      delivery_failed: (envelope) => `Not delivered: a message for ${envelope}`,
      send_failed: (envelope) => `Not sent: ${envelope}`,
    },
    lead: {
      completed: (values) => `Everyone has signed “${values.envelopeName}”. The signed and sealed copy is ready.`,
      declined: (values, who) => `${who} declined to sign “${values.envelopeName}”, so it was closed for everyone.`,
      voided: (values) => `“${values.envelopeName}” was voided. Its signing links no longer work.`,
      expired: (values) => `“${values.envelopeName}” expired before everyone had signed. Its signing links no longer work.`,
      send_failed: (values) => `“${values.envelopeName}” was scheduled to be sent, but it could not be sent at its time, so it is a draft again. Fix it and send it (or schedule it) again.`,
      delivery_failed: (values, who) =>
        `The ${values.kind ? (TEAM_WORDS['en-US'].kinds[values.kind] ?? 'message') : 'message'} for “${values.envelopeName}” to ${who} could not be delivered${values.channel ? ` by ${TEAM_WORDS['en-US'].channels[values.channel] ?? values.channel}` : ''}.`,
    },
    reason: 'Reason given:',
    why: 'Why:',
    attached: 'The signed documents are attached to this message.',
    action: 'Download the signed copy with your team’s API key',
    someone: 'A recipient',
    channels: { email: 'email', sms: 'SMS', whatsapp: 'WhatsApp' },
    kinds: {
      invitation: 'invitation',
      your_turn: 'invitation',
      delegated: 'invitation',
      reminder: 'reminder',
      completed: 'final copy',
      voided: 'closing notice',
      declined: 'closing notice',
      expired: 'closing notice',
      handed_over: 'hand-over notice',
    },
    id: (id) => `Envelope ${id}`,
    footer: 'Your team’s notification settings send this message (notifications in the team settings).',
  },
  'tr-TR': {
    subject: {
      completed: (envelope) => `Tamamlandı: ${envelope}`,
      declined: (envelope) => `Reddedildi: ${envelope}`,
      voided: (envelope) => `İptal edildi: ${envelope}`,
      expired: (envelope) => `Süresi doldu: ${envelope}`,
      delivery_failed: (envelope) => `İletilemedi: ${envelope} için bir ileti`,
      send_failed: (envelope) => `Gönderilemedi: ${envelope}`,
    },
    lead: {
      completed: (values) => `Herkes “${values.envelopeName}” belgesini imzaladı. İmzalı ve mühürlü kopya hazır.`,
      declined: (values, who) => `${who}, “${values.envelopeName}” belgesini imzalamayı reddetti; belge herkes için kapatıldı.`,
      voided: (values) => `“${values.envelopeName}” iptal edildi. İmza bağlantıları artık çalışmıyor.`,
      expired: (values) => `“${values.envelopeName}” belgesinin süresi herkes imzalamadan doldu. İmza bağlantıları artık çalışmıyor.`,
      send_failed: (values) => `“${values.envelopeName}” zamanlanmış saatinde gönderilemedi ve yeniden taslak oldu. Düzeltip yeniden gönderin (ya da zamanlayın).`,
      delivery_failed: (values, who) =>
        `“${values.envelopeName}” için ${who} kişisine gönderilen ${values.kind ? (TEAM_WORDS['tr-TR'].kinds[values.kind] ?? 'ileti') : 'ileti'}${values.channel ? ` (${TEAM_WORDS['tr-TR'].channels[values.channel] ?? values.channel})` : ''} iletilemedi.`,
    },
    reason: 'Belirtilen neden:',
    why: 'Neden:',
    attached: 'İmzalı belgeler bu iletinin ekinde yer alıyor.',
    action: 'İmzalı kopyayı ekibinizin API anahtarıyla indirin',
    someone: 'Bir alıcı',
    channels: { email: 'e-posta', sms: 'SMS', whatsapp: 'WhatsApp' },
    kinds: {
      invitation: 'davet',
      your_turn: 'davet',
      delegated: 'davet',
      reminder: 'hatırlatma',
      completed: 'imzalı kopya',
      voided: 'kapanış bildirimi',
      declined: 'kapanış bildirimi',
      expired: 'kapanış bildirimi',
      handed_over: 'devir bildirimi',
    },
    id: (id) => `Zarf ${id}`,
    footer: 'Bu iletiyi ekibinizin bildirim ayarları gönderdi (ekip ayarlarında notifications).',
  },
};

/** A person as a team's notice names them: name and address (or phone), whichever are known. */
function personLabel(person: TeamNoticeValues['person'], someone: string): string {
  if (!person) return someone;
  const contact = person.email ?? person.phone;
  if (person.name && contact) return `${person.name} (${contact})`;
  return person.name ?? contact ?? someone;
}

export function renderTeamNotice(event: TeamNoticeEventName, locale: Locale, values: TeamNoticeValues): { subject: string; text: string; html: string } {
  const words = TEAM_WORDS[locale];
  const who = personLabel(values.person, words.someone);
  const paragraphs = [
    words.lead[event](values, who),
    ...(values.reason && (event === 'declined' || event === 'voided') ? [`${words.reason} ${values.reason}`] : []),
    ...(values.error && (event === 'delivery_failed' || event === 'send_failed') ? [`${words.why} ${values.error}`] : []),
    ...(values.attached && event === 'completed' ? [words.attached] : []),
    words.id(values.envelopeId),
  ];
  return mailBody(locale, {
    subject: words.subject[event](values.envelopeName),
    paragraphs,
    action: event === 'completed' && values.link ? { label: words.action, link: values.link } : null,
    after: [],
    footer: words.footer,
    brand: values.brand,
  });
}

/** A finished bulk send, as the team's notice tells it (`bulk_send_completed`). */
export type BulkSendNoticeValues = { id: string; name: string | null; total: number; sent: number; failed: number; link: string; brand?: MailBrand };

const BULK_SEND_WORDS: Record<Locale, { subject: (name: string) => string; lead: (values: BulkSendNoticeValues, name: string) => string; action: string; id: (id: string) => string }> = {
  'en-US': {
    subject: (name) => `Bulk send finished: ${name}`,
    lead: (values, name) => `The bulk send “${name}” has finished: ${values.sent} of ${values.total} ${values.total === 1 ? 'row was' : 'rows were'} sent, ${values.failed} failed.`,
    action: 'See every row with your team’s API key',
    id: (id) => `Bulk send ${id}`,
  },
  'tr-TR': {
    subject: (name) => `Toplu gönderim tamamlandı: ${name}`,
    lead: (values, name) => `“${name}” toplu gönderimi tamamlandı: ${values.total} satırdan ${values.sent} tanesi gönderildi, ${values.failed} tanesi başarısız oldu.`,
    action: 'Tüm satırları ekibinizin API anahtarıyla görün',
    id: (id) => `Toplu gönderim ${id}`,
  },
};

export function renderBulkSendNotice(locale: Locale, values: BulkSendNoticeValues): { subject: string; text: string; html: string } {
  const words = BULK_SEND_WORDS[locale];
  const name = values.name ?? values.id;
  return mailBody(locale, {
    subject: words.subject(name),
    paragraphs: [words.lead(values, name), words.id(values.id)],
    action: { label: words.action, link: values.link },
    after: [],
    footer: TEAM_WORDS[locale].footer,
    brand: values.brand,
  });
}

/** The short texts of SMS and WhatsApp messages (plain text: nothing to escape, no markup). */
const SHORT: Record<Locale, Record<MailKind, (values: MailValues) => string>> = {
  'en-US': {
    invitation: (values) => `“${values.envelopeName}” is waiting for your signature: ${values.link}`,
    your_turn: (values) => `Your turn to sign “${values.envelopeName}”: ${values.link}`,
    reminder: (values) => `Reminder: “${values.envelopeName}” is waiting for your signature: ${values.link}`,
    voided: (values) => `“${values.envelopeName}” was cancelled by the sender.${values.reason ? ` Reason: ${values.reason}` : ''}`,
    declined: (values) => `“${values.envelopeName}” was declined and closed.${values.reason ? ` Reason: ${values.reason}` : ''}`,
    expired: (values) => `“${values.envelopeName}” expired before everyone had signed.`,
    delegated: (values) => `${values.from ?? 'A recipient'} asked you to sign “${values.envelopeName}” in their place: ${values.link}`,
    handed_over: (values) => `You handed “${values.envelopeName}” over to ${values.handedTo ?? 'another person'}.`,
    completed: (values) => `Everyone has signed “${values.envelopeName}”. Download the signed copy: ${values.link}`,
  },
  'tr-TR': {
    invitation: (values) => `“${values.envelopeName}” imzanızı bekliyor: ${values.link}`,
    your_turn: (values) => `“${values.envelopeName}” için imza sırası sizde: ${values.link}`,
    reminder: (values) => `Hatırlatma: “${values.envelopeName}” imzanızı bekliyor: ${values.link}`,
    voided: (values) => `“${values.envelopeName}” gönderen tarafından iptal edildi.${values.reason ? ` Neden: ${values.reason}` : ''}`,
    declined: (values) => `“${values.envelopeName}” reddedildi ve kapatıldı.${values.reason ? ` Neden: ${values.reason}` : ''}`,
    expired: (values) => `“${values.envelopeName}” belgesinin süresi herkes imzalamadan doldu.`,
    delegated: (values) => `${values.from ?? 'Bir alıcı'}, “${values.envelopeName}” belgesini kendi yerine imzalamanızı istedi: ${values.link}`,
    handed_over: (values) => `“${values.envelopeName}” belgesini ${values.handedTo ?? 'başka bir kişiye'} devrettiniz.`,
    completed: (values) => `Herkes “${values.envelopeName}” belgesini imzaladı. İmzalı kopyayı indirin: ${values.link}`,
  },
};

export function renderShortText(kind: MailKind, locale: Locale, values: MailValues): string {
  return SHORT[locale][kind](values);
}

/** A one-time passcode's text (SMS or WhatsApp): the code first, so a phone's preview shows it. */
const OTP_TEXT: Record<Locale, (values: { code: string; envelopeName: string; minutes: number }) => string> = {
  'en-US': (values) => `${values.code} is your code to sign “${values.envelopeName}”. It expires in ${values.minutes} minutes. Do not share it with anyone.`,
  'tr-TR': (values) => `${values.code}: “${values.envelopeName}” belgesini imzalamak için kodunuz. ${values.minutes} dakika geçerlidir. Kimseyle paylaşmayın.`,
};

export function renderOtpText(locale: Locale, values: { code: string; envelopeName: string; minutes: number }): string {
  return OTP_TEXT[locale](values);
}

/** The notice to a team's users that the service disabled one of the team's webhook endpoints. */
export type WebhookDisabledValues = { name: string | null; url: string; reason: string };

const WEBHOOK_DISABLED: Record<Locale, { subject: string; greeting: (name: string | null) => string; lead: (url: string) => string; reason: string; action: string; footer: string }> = {
  'en-US': {
    subject: 'A webhook endpoint was disabled',
    greeting: (name) => (name ? `Hello ${name},` : 'Hello,'),
    lead: (url) => `Your team's webhook endpoint ${url} kept failing, so it was disabled. No events are sent to it until it is enabled again.`,
    reason: 'Reason:',
    action: 'Fix the receiver, then enable the endpoint again (updateWebhook with enabled: true, or PATCH /api/v1/key/webhooks/{id}) and redeliver what it missed from its delivery log.',
    footer: 'This message was sent automatically.',
  },
  'tr-TR': {
    subject: 'Bir webhook uç noktası devre dışı bırakıldı',
    greeting: (name) => (name ? `Merhaba ${name},` : 'Merhaba,'),
    lead: (url) => `Ekibinizin ${url} webhook uç noktası sürekli hata verdiği için devre dışı bırakıldı. Yeniden etkinleştirilene kadar ona olay gönderilmeyecek.`,
    reason: 'Neden:',
    action:
      'Alıcıyı düzeltin, ardından uç noktayı yeniden etkinleştirin (enabled: true ile updateWebhook veya PATCH /api/v1/key/webhooks/{id}) ve kaçırdıklarını teslimat kaydından yeniden gönderin.',
    footer: 'Bu ileti otomatik olarak gönderildi.',
  },
};

export function renderWebhookDisabledMail(locale: Locale, values: WebhookDisabledValues): { subject: string; text: string; html: string } {
  const words = WEBHOOK_DISABLED[locale];
  const text = [words.greeting(values.name), '', words.lead(values.url), '', `${words.reason} ${values.reason}`, '', words.action, '', '--', words.footer, ''].join('\n');
  const e = escapeHtml;
  const html = `<!doctype html>
<html lang="${e(locale)}"><head><meta charset="utf-8"><title>${e(words.subject)}</title></head>
<body style="font-family: Arial, sans-serif; line-height: 1.5; color: #1f2328;">
<p>${e(words.greeting(values.name))}</p>
<p>${e(words.lead(values.url))}</p>
<p>${e(words.reason)} ${e(values.reason)}</p>
<p>${e(words.action)}</p>
<p style="color: #57606a; font-size: 12px;">${e(words.footer)}</p>
</body></html>
`;
  return { subject: words.subject, text, html };
}

/** A public link's one-time code (issue 36): the code first in the subject, so a mail list shows it. */
const PUBLIC_LINK_CODE: Record<
  Locale,
  { subject: (code: string) => string; greeting: (name: string) => string; lead: (form: string, minutes: number) => string; ignore: string; footer: string }
> = {
  'en-US': {
    subject: (code) => `${code} is your code`,
    greeting: (name) => `Hello ${name},`,
    lead: (form, minutes) => `Enter this code on the form “${form}” to continue to signing. It expires in ${minutes} minutes. Do not share it with anyone.`,
    ignore: 'If you did not fill in this form, ignore this message: nothing is made without the code.',
    footer: 'This message was sent automatically.',
  },
  'tr-TR': {
    subject: (code) => `Kodunuz: ${code}`,
    greeting: (name) => `Merhaba ${name},`,
    lead: (form, minutes) => `İmzalamaya devam etmek için bu kodu “${form}” formuna girin. ${minutes} dakika geçerlidir. Kimseyle paylaşmayın.`,
    ignore: 'Bu formu siz doldurmadıysanız bu iletiyi dikkate almayın: kod girilmeden hiçbir şey oluşturulmaz.',
    footer: 'Bu ileti otomatik olarak gönderildi.',
  },
};

export function renderPublicLinkCodeMail(locale: Locale, values: { name: string; code: string; formName: string; minutes: number }): { subject: string; text: string; html: string } {
  const words = PUBLIC_LINK_CODE[locale];
  const text = [words.greeting(values.name), '', words.lead(values.formName, values.minutes), '', values.code, '', words.ignore, '', '--', words.footer, ''].join('\n');
  const e = escapeHtml;
  const html = `<!doctype html>
<html lang="${e(locale)}"><head><meta charset="utf-8"><title>${e(words.subject(values.code))}</title></head>
<body style="font-family: Arial, sans-serif; line-height: 1.5; color: #1f2328;">
<p>${e(words.greeting(values.name))}</p>
<p>${e(words.lead(values.formName, values.minutes))}</p>
<p style="font-size: 28px; letter-spacing: 4px; font-weight: bold;">${e(values.code)}</p>
<p>${e(words.ignore)}</p>
<p style="color: #57606a; font-size: 12px;">${e(words.footer)}</p>
</body></html>
`;
  return { subject: words.subject(values.code), text, html };
}
