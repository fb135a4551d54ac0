// Types of the signing page (its modules are plain JavaScript checked by tsc through JSDoc, see
// tsconfig.json here). Only the type checker reads this file; the browser never asks for it.
// The shapes are the GraphQL answers as the page selects them (api.js, SESSION_SELECTION), and
// the field values of docs/fields.md as the page reads and sends them.

/** What is on screen: the value of `document.body.dataset.screen`. */
export type Screen = 'loading' | 'signing' | 'host' | 'hand-back' | 'verify' | MessageScreen;

/** The screens that only say where the signer stands (screens/messages.js). */
export type MessageScreen =
  | 'done'
  | 'finalized'
  | 'voided'
  | 'expired'
  | 'declined'
  | 'delegated'
  | 'not-your-turn'
  // An approver (issue 33): approved, the quorum not reached yet; or its approval no longer needed.
  | 'approved'
  | 'role-completed'
  | 'invalid'
  | 'error'
  // A one-use signing URL (embedded signing): opened before, never opened in time, its session ended.
  | 'used'
  | 'link-expired'
  | 'session-expired';

export type Locale = 'en-US' | 'tr-TR';

export type Session = {
  envelope: { id: string; name: string; status: 'draft' | 'sent' | 'finalized' | 'voided' | 'expired'; revision: number };
  signerName: string;
  /** The sending team's name and look, and whether a decline mails it. */
  sender?: { displayName: string | null; logoUrl: string | null; accentColor: string | null; footer: string | null; declineNotified: boolean };
  locale: string | null;
  isMyTurn: boolean;
  isExpired: boolean;
  requiredFieldIds: string[];
  recipient: {
    id: string;
    type: 'signer' | 'host' | 'in_person_signer' | 'delegator' | 'viewer' | 'approver';
    roleName: string;
    color: string;
    activatedAt: string | null;
    completedAt: string | null;
    declinedAt: string | null;
    delegatedAt: string | null;
  };
  documents: SessionDocument[];
  fields: Field[];
  /** Earlier signers' completed fields (read only), in their role's colour, with who gave them. */
  completedFields?: { color: string; signerName: string; field: Field }[];
  hostedSigners: HostedSigner[];
  /** For an approver: its quorum and the approvals so far; null for other roles. */
  approval?: { quorum: number; approvals: number; approvedByMe: boolean } | null;
  /** A signer at a trust service (advanced or qualified): where its signature stands; null for a simple signature. */
  trustSignature?: {
    level: string;
    status: 'not_started' | 'authorizing' | 'signing' | 'signed' | 'failed';
    error: { name: string; reason: string; message: string; providerSaid?: string | null } | null;
    authorizeUrl: string | null;
  } | null;
  otp: {
    required: boolean;
    verified: boolean;
    maskedPhone: string | null;
    channel: string | null;
    resendInSeconds: number;
  };
};

export type SessionDocument = { id: string; name: string; order: number; pageCount: number; pages: { index: number; width: number; height: number }[] };

export type HostedSigner = { id: string; roleName: string; personName?: string | null; activatedAt: string | null; completedAt: string | null };

export type CompletedField = NonNullable<Session['completedFields']>[number];

export type FieldView = { documentId: string; page: number; location: { x: number; y: number }; size: { width: number; height: number } };

type FieldOf<Type extends string, Config, Value> = {
  id: string;
  identifier: string;
  type: Type;
  label: string | null;
  tooltip: string | null;
  required: boolean;
  readonly: boolean;
  value: Value | null;
  config: Config;
  /** Conditions under which the field is shown (field-rules.js); null: always. */
  visibleWhen?: import('./field-rules.js').VisibleWhen | null;
  views: FieldView[];
};

export type TextField = FieldOf<'text', { placeholder?: string | null; maxLength: number; multiline: boolean; pattern?: string | null }, { text: string }>;
export type CheckboxField = FieldOf<'checkbox', Record<string, never>, { checked: boolean }>;
export type RadioField = FieldOf<'radio', { options?: { value: string; label: string }[] }, { selected: string }>;
export type BinaryChoiceField = FieldOf<'binary_choice', { acceptLabel?: string | null; declineLabel?: string | null }, { choice: 'accept' | 'decline' }>;
export type SimpleSignatureField = FieldOf<
  'simple_signature',
  { allowTyped?: boolean; allowDrawn?: boolean },
  { kind: 'drawn'; image: string } | { kind: 'typed'; text: string; font: string }
>;
export type BiometricSignatureField = FieldOf<'biometric_signature', { minPoints?: number }, { image: string; strokes: PenPoint[][] }>;

export type InitialsField = FieldOf<'initials', { allowTyped?: boolean; allowDrawn?: boolean }, { kind: 'drawn'; image: string } | { kind: 'typed'; text: string; font: string }>;
type NumberFormat = { decimals?: number; prefix?: string | null; suffix?: string | null };
export type DateField = FieldOf<'date', { format?: string; min?: string | null; max?: string | null }, { date: string }>;
export type NumberField = FieldOf<'number', NumberFormat & { min?: number | null; max?: number | null }, { number: number }>;
export type DropdownField = FieldOf<'dropdown', { options?: { value: string; label: string }[]; placeholder?: string | null }, { selected: string }>;
/** Filled by the service (date_signed, full_name, email) or computed (formula): the signer gives no value. */
export type DateSignedField = FieldOf<'date_signed', { format?: string; timeZone?: string }, { date: string }>;
export type PersonField = FieldOf<'full_name' | 'email', Record<string, never>, { text: string }>;
export type FormulaField = FieldOf<'formula', NumberFormat & { expression?: string }, { number: number }>;
/** One file a signer uploaded (uploadSigningAttachment's answer; the value's entries). */
export type AttachmentFile = { id: string; name: string; contentType: string; size: number; sha256: string };
export type AttachmentField = FieldOf<'attachment', { accept?: string[]; maxFiles?: number; maxBytes?: number }, { files: AttachmentFile[] }>;

export type Field =
  | TextField
  | CheckboxField
  | RadioField
  | BinaryChoiceField
  | SimpleSignatureField
  | BiometricSignatureField
  | InitialsField
  | DateField
  | NumberField
  | DropdownField
  | DateSignedField
  | PersonField
  | FormulaField
  | AttachmentField;
export type SignatureField = SimpleSignatureField | BiometricSignatureField | InitialsField;

/** A value as the page sends it for a field (the service checks it against the field's type). */
export type FieldValue = NonNullable<Field['value']>;

/** One sample of the signature pad: CSS pixels from the pad's top-left, ms since the first touch, pressure 0–1. */
export type PenPoint = { x: number; y: number; t: number; p: number; pointerType?: string };

/** What a refusal of the service carries besides its name (`extensions.context`): JSON, as the service sent it. */
export type ErrorContext = Record<string, any>;
