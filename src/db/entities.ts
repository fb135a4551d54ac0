import { AuditEventSchema } from '../domain/audit/audit-event.entity.ts';
import { BulkSendRowSchema, BulkSendSchema } from '../domain/bulk-send/bulk-send.entity.ts';
import { ContactSchema } from '../domain/contact/contact.entity.ts';
import { ContactGroupMemberSchema, ContactGroupSchema } from '../domain/contact/contact-group.entity.ts';
import { DocumentSchema } from '../domain/document/document.entity.ts';
import { EnvelopeSchema } from '../domain/envelope/envelope.entity.ts';
import { FieldSchema } from '../domain/field/field.entity.ts';
import { FieldAttachmentSchema } from '../domain/field/field-attachment.entity.ts';
import { FieldViewSchema } from '../domain/field/field-view.entity.ts';
import { IdempotencyRecordSchema } from '../domain/idempotency/idempotency-record.entity.ts';
import { PhoneMessageSchema } from '../domain/notification/phone-message.entity.ts';
import { OutboxMessageSchema } from '../domain/outbox/outbox-message.entity.ts';
import { PublicLinkSchema, PublicLinkVisitSchema } from '../domain/public-link/public-link.entity.ts';
import { AgentSchema } from '../domain/recipient/agent.entity.ts';
import { RecipientSchema } from '../domain/recipient/recipient.entity.ts';
import { ApprovalSchema } from '../domain/signing/approval.entity.ts';
import { SignerSignatureSchema } from '../domain/signing/signer-signature.entity.ts';
import { SigningOtpSchema } from '../domain/signing/signing-otp.entity.ts';
import { SigningTokenSchema } from '../domain/signing/signing-token.entity.ts';
import { SigningUrlSchema } from '../domain/signing/signing-url.entity.ts';
import { ApiKeySchema } from '../domain/team/api-key.entity.ts';
import { TeamSchema } from '../domain/team/team.entity.ts';
import { TeamUserSchema } from '../domain/team/team-user.entity.ts';
import { WorkspaceSchema } from '../domain/team/workspace.entity.ts';
import { TemplateSchema } from '../domain/template/template.entity.ts';
import { TemplateRecipientSchema } from '../domain/template/template-recipient.entity.ts';
import { WebhookAttemptSchema, WebhookDeliverySchema, WebhookEndpointSchema } from '../domain/webhook/webhook.entity.ts';
import { SandboxClockSchema, SharedSecretFingerprintSchema } from './instance-agreement.entity.ts';
import { RateLimitEntrySchema } from './rate-limit.entity.ts';

/** The explicit entity list: no folder scanning, so start-up cannot pick up stray files. */
export const entities = [
  WorkspaceSchema,
  TeamSchema,
  ApiKeySchema,
  TeamUserSchema,
  ContactSchema,
  ContactGroupSchema,
  ContactGroupMemberSchema,
  TemplateSchema,
  TemplateRecipientSchema,
  EnvelopeSchema,
  DocumentSchema,
  RecipientSchema,
  AgentSchema,
  FieldSchema,
  FieldViewSchema,
  FieldAttachmentSchema,
  SigningTokenSchema,
  ApprovalSchema,
  SignerSignatureSchema,
  SigningOtpSchema,
  SigningUrlSchema,
  AuditEventSchema,
  OutboxMessageSchema,
  PhoneMessageSchema,
  IdempotencyRecordSchema,
  RateLimitEntrySchema,
  SharedSecretFingerprintSchema,
  SandboxClockSchema,
  WebhookEndpointSchema,
  WebhookDeliverySchema,
  WebhookAttemptSchema,
  BulkSendSchema,
  BulkSendRowSchema,
  PublicLinkSchema,
  PublicLinkVisitSchema,
];
