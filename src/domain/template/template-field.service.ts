import type { EntityManager } from '@mikro-orm/postgresql';
import { InvalidRequestError } from '../../shared/errors.ts';
import { isUuid } from '../../shared/ids.ts';
import { TEMPLATE_CAPACITY, ensureCapacity } from '../capacity.ts';
import { Document } from '../document/document.entity.ts';
import { readField, readFields, type FieldData } from '../owner/owner.read.ts';
import { FieldView } from '../field/field-view.entity.ts';
import { Field } from '../field/field.entity.ts';
import { FieldDuplicateIdentifierError, FieldNotFoundError } from '../field/field.errors.ts';
import {
  checkFieldBatch,
  checkFieldPatch,
  createFieldsInput,
  fieldTargets,
  parseEachField,
  updateFieldInput,
  writeViews,
  type FieldTargets,
} from '../field/field.service.ts';
import type { ServiceContext } from '../service-context.ts';
import { issuesFromZod } from '../validation.ts';
import { TemplateRecipient } from './template-recipient.entity.ts';
import type { Template } from './template.entity.ts';
import { auditTemplateChange, changeTemplate, createInTemplate } from './template.service.ts';

/*
 * Fields of a template: the envelope field's body, checks and all-or-nothing batches, against the
 * template's documents and roles. A template has no status, so its fields change at any time
 * (spec §3.3).
 */

async function loadTargets(em: EntityManager, template: Template): Promise<FieldTargets<TemplateRecipient>> {
  const [documents, roles] = await Promise.all([em.find(Document, { template }), em.find(TemplateRecipient, { template })]);
  return fieldTargets(documents, roles, 'template');
}

function countTemplateViews(em: EntityManager, template: Template): Promise<number> {
  return em.count(FieldView, { field: { template } });
}

/** Adds many fields to a template your team owns, all or nothing. Idempotent per `Idempotency-Key`. */
export async function createTemplateFields(
  context: ServiceContext,
  options: { templateId: string; input: unknown; idempotencyKey?: string },
): Promise<FieldData[]> {
  const parsed = createFieldsInput.safeParse(options.input);
  if (!parsed.success) throw new InvalidRequestError(issuesFromZod(parsed.error));
  const shaped = parseEachField(parsed.data.fields);
  return createInTemplate(
    context,
    { templateId: options.templateId, idempotencyKey: options.idempotencyKey, request: { operation: 'createTemplateFields', input: options.input } },
    async (change) => {
      const { em, template } = change;
      const { checked: batch, identifiers } = await checkFieldBatch(shaped, await loadTargets(em, template));
      const taken = await em.find(Field, { template, identifier: { $in: identifiers } }, { fields: ['identifier'] });
      if (taken.length > 0) throw new FieldDuplicateIdentifierError(taken.map((field) => field.identifier));
      ensureCapacity('Template', 'fields', TEMPLATE_CAPACITY.fields, await em.count(Field, { template }), batch.length);
      const addedViews = batch.reduce((sum, field) => sum + field.views.length, 0);
      ensureCapacity('Template', 'field views', TEMPLATE_CAPACITY.views, await countTemplateViews(em, template), addedViews);
      // One creation time for the batch, as for envelopes: it lists in a stable order.
      const createdAt = change.now;
      const created = batch.map((field) => {
        const { views, recipient, ...values } = field;
        const entity = em.create(Field, { ...values, createdAt, template, templateRecipient: recipient, envelope: null, recipient: null });
        em.persist(entity);
        writeViews(em, entity, views);
        return entity;
      });
      await em.flush();
      await auditTemplateChange(context, { ...change, templateId: template.id }, 'field.added', {
        fields: created.map((field) => ({ fieldId: field.id, identifier: field.identifier, type: field.type, recipientId: field.templateRecipient?.id })),
      });
      return created.map((field) => field.id).join(',');
    },
    async (reading, joinedIds) => {
      const fieldIds = joinedIds.split(',');
      const fields = await readFields(reading, { owner: { kind: 'template', id: options.templateId }, fieldIds });
      const byId = new Map(fields.map((field) => [field.id, field]));
      return fieldIds.map((id) => byId.get(id)).filter((field): field is FieldData => field !== undefined);
    },
  );
}

async function findTemplateField(em: EntityManager, template: Template, fieldId: string): Promise<Field> {
  if (!isUuid(fieldId)) throw new FieldNotFoundError(fieldId, 'template');
  const field = await em.findOne(Field, { id: fieldId, template });
  if (!field) throw new FieldNotFoundError(fieldId, 'template');
  return field;
}

/** Changes a field of a template your team owns, checked whole as an envelope field's change is. */
export async function updateTemplateField(
  context: ServiceContext,
  options: { templateId: string; fieldId: string; input: unknown },
): Promise<FieldData> {
  const parsed = updateFieldInput.safeParse(options.input);
  if (!parsed.success) throw new InvalidRequestError(issuesFromZod(parsed.error));
  const patch = parsed.data.field;
  await changeTemplate(context, options.templateId, async (change) => {
    const { em, template } = change;
    const field = await findTemplateField(em, template, options.fieldId);
    if (Object.keys(patch).length === 0) return;
    const currentViews = await em.find(FieldView, { field }, { orderBy: { position: 'asc' } });
    const checked = checkFieldPatch(field, { recipientId: field.templateRecipient?.id ?? '', views: currentViews }, patch, await loadTargets(em, template));
    if (checked.identifier !== field.identifier) {
      const taken = await em.findOne(Field, { template, identifier: checked.identifier }, { fields: ['id'] });
      if (taken) throw new FieldDuplicateIdentifierError([checked.identifier]);
    }
    const { views, recipient, ...values } = checked;
    em.assign(field, { ...values, templateRecipient: recipient });
    if (patch.views !== undefined) {
      const others = (await countTemplateViews(em, template)) - currentViews.length;
      ensureCapacity('Template', 'field views', TEMPLATE_CAPACITY.views, others, views.length);
      await em.nativeDelete(FieldView, { field });
      writeViews(em, field, views);
    }
    await auditTemplateChange(context, { ...change, templateId: template.id }, 'field.updated', { fieldId: field.id, changed: Object.keys(patch) });
  });
  return readField(context, { owner: { kind: 'template', id: options.templateId }, fieldId: options.fieldId });
}

/** Removes a field (and its views) from a template your team owns. */
export async function deleteTemplateField(context: ServiceContext, options: { templateId: string; fieldId: string }): Promise<void> {
  await changeTemplate(context, options.templateId, async (change) => {
    const field = await findTemplateField(change.em, change.template, options.fieldId);
    await change.em.nativeDelete(Field, { id: field.id, template: change.template });
    await auditTemplateChange(context, { ...change, templateId: change.template.id }, 'field.removed', { fieldId: field.id, identifier: field.identifier });
  });
}
