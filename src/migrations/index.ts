import { Migration20261122001538_initial } from './Migration20261122001538_initial.ts';
import { Migration20261122003526_listing_indexes } from './Migration20261122003526_listing_indexes.ts';
import { Migration20261122155122_rate_limit } from './Migration20261122155122_rate_limit.ts';
import { Migration20261122175208_outbox_failed_at } from './Migration20261122175208_outbox_failed_at.ts';
import { Migration20261122200500_agent_notification } from './Migration20261122200500_agent_notification.ts';
import { Migration20261122201000_webhooks } from './Migration20261122201000_webhooks.ts';
import { Migration20261122201500_signing_otp } from './Migration20261122201500_signing_otp.ts';
import { Migration20261122203000_delivery_history_indexes } from './Migration20261122203000_delivery_history_indexes.ts';
import { Migration20261122204000_webhook_previous_secret } from './Migration20261122204000_webhook_previous_secret.ts';
import { Migration20261123090000_failure_reasons } from './Migration20261123090000_failure_reasons.ts';
import { Migration20261126104242_instance_agreement } from './Migration20261126104242_instance_agreement.ts';
import { Migration20261126104933_outbox_claimed_by } from './Migration20261126104933_outbox_claimed_by.ts';
import { Migration20261126130000_outbox_trace_context } from './Migration20261126130000_outbox_trace_context.ts';
import { Migration20261126140000_embedded_signing } from './Migration20261126140000_embedded_signing.ts';
import { Migration20261126150000_envelope_finding } from './Migration20261126150000_envelope_finding.ts';
import { Migration20261126161000_envelope_certificates } from './Migration20261126161000_envelope_certificates.ts';
import { Migration20261126162000_envelope_stamp } from './Migration20261126162000_envelope_stamp.ts';
import { Migration20261126164000_bulk_send } from './Migration20261126164000_bulk_send.ts';
import { Migration20261127120000_field_types } from './Migration20261127120000_field_types.ts';
import { Migration20261127121000_field_visible_when } from './Migration20261127121000_field_visible_when.ts';
import { Migration20261127122000_scheduled_send } from './Migration20261127122000_scheduled_send.ts';
import { Migration20261127123559_approvers } from './Migration20261127123559_approvers.ts';
import { Migration20261127130000_field_attachments } from './Migration20261127130000_field_attachments.ts';
import { Migration20261127131000_envelope_revision } from './Migration20261127131000_envelope_revision.ts';
import { Migration20261127133000_public_links } from './Migration20261127133000_public_links.ts';
import { Migration20261127134000_public_link_data } from './Migration20261127134000_public_link_data.ts';
import { Migration20261127141000_signature_levels } from './Migration20261127141000_signature_levels.ts';
import { Migration20261128110000_js_number_json } from './Migration20261128110000_js_number_json.ts';

/** Every committed migration, in order. `npm run migration:create` appends to this list. */
export const migrations = [
  Migration20261122001538_initial,
  Migration20261122003526_listing_indexes,
  Migration20261122155122_rate_limit,
  Migration20261122175208_outbox_failed_at,
  Migration20261122200500_agent_notification,
  Migration20261122201000_webhooks,
  Migration20261122201500_signing_otp,
  Migration20261122203000_delivery_history_indexes,
  Migration20261122204000_webhook_previous_secret,
  Migration20261123090000_failure_reasons,
  Migration20261126104242_instance_agreement,
  Migration20261126104933_outbox_claimed_by,
  Migration20261126130000_outbox_trace_context,
  Migration20261126140000_embedded_signing,
  Migration20261126150000_envelope_finding,
  Migration20261126161000_envelope_certificates,
  Migration20261126162000_envelope_stamp,
  Migration20261126164000_bulk_send,
  Migration20261127120000_field_types,
  Migration20261127121000_field_visible_when,
  Migration20261127122000_scheduled_send,
  Migration20261127123559_approvers,
  Migration20261127130000_field_attachments,
  Migration20261127131000_envelope_revision,
  Migration20261127133000_public_links,
  Migration20261127134000_public_link_data,
  Migration20261127141000_signature_levels,
  Migration20261128110000_js_number_json,
];
