import { TEMPLATE_CAPACITY } from '../capacity.ts';
import type { ContentCreation, ContentOwner, OwnerChange } from '../owner/owner.ts';
import { templateRoles } from './template-roles.ts';
import { auditTemplateChange, changeTemplate, createInTemplate, findOwnTemplate, type TemplateChange } from './template.service.ts';

/*
 * A template as the owner of documents, roles and fields (owner/owner.ts): found through the
 * template tenant gate (`Template.NotFound`), changed only by its owning team
 * (`Template.NotOwner`) under the template's row lock, at any time (a template has no status),
 * audited in the owning team's trail with the template's id.
 */

function ownerChange(change: TemplateChange): OwnerChange {
  return { em: change.em, caller: change.caller, now: change.now, ownerId: change.template.id, scope: { template: change.template } };
}

/** The names a template's creations carry in their idempotency fingerprint. */
const TEMPLATE_CREATIONS: Record<ContentCreation, string> = {
  addDocument: 'addTemplateDocument',
  addRecipient: 'addTemplateRecipient',
  createFields: 'createTemplateFields',
};

export const templateOwner: ContentOwner = {
  kind: 'template',
  capacity: { owner: 'Template', ...TEMPLATE_CAPACITY },
  change: (context, templateId, work) => changeTemplate(context, templateId, (change) => work(ownerChange(change))),
  createIn: (context, options, create, read) =>
    createInTemplate(
      context,
      { templateId: options.ownerId, idempotencyKey: options.idempotencyKey, request: { operation: TEMPLATE_CREATIONS[options.creation], ...options.request } },
      (change) => create(ownerChange(change)),
      read,
    ),
  audit: (context, change, type, details) => auditTemplateChange(context, { ...change, templateId: change.ownerId }, type, details),
  /** The template is visible (`Template.NotFound`) and the caller's team owns it (`Template.NotOwner`). */
  async checkUploadTarget(context, templateId) {
    await findOwnTemplate(context.em, await context.caller(), templateId);
  },
  recipients: templateRoles,
};
