import { TEMPLATE_CAPACITY } from '../capacity.ts';
import { auditTemplateChange, changeTemplate, findOwnTemplate } from '../template/template.service.ts';
import { templateRoles } from '../template/template-roles.ts';
import { type ContentOwner, ownerChange } from './owner.ts';

/*
 * A template as the owner of documents, roles and fields (owner/owner.ts): found through the
 * template tenant gate (`Template.NotFound`), changed only by its owning team
 * (`Template.NotOwner`) under the template's row lock, at any time (a template has no status),
 * audited in the owning team's trail with the template's id.
 */

export const templateOwner: ContentOwner = {
  kind: 'template',
  capacity: { owner: 'Template', ...TEMPLATE_CAPACITY },
  change: (context, templateId, work) => changeTemplate(context, templateId, (change) => work(ownerChange(change, { template: change.template }))),
  creations: { addDocument: 'addTemplateDocument', addRecipient: 'addTemplateRecipient', createFields: 'createTemplateFields' },
  audit: (context, change, type, details) => auditTemplateChange(context, { ...change, templateId: change.ownerId }, type, details),
  /** The template is visible (`Template.NotFound`) and the caller's team owns it (`Template.NotOwner`). */
  async checkUploadTarget(context, templateId) {
    await findOwnTemplate(context.em, await context.caller(), templateId);
  },
  recipients: templateRoles,
};
