import { z } from 'zod';
import { boundedInteger, identifierSlug, readableName } from '../validation.ts';
import { agentsSchema, MAX_AGENTS_PER_RECIPIENT } from './agent-input.ts';
import { recipientTypes, signatureLevels } from './recipient.entity.ts';

/*
 * The keys a recipient has whoever owns it (an envelope's recipient, a template's role), as
 * requests give them. Each owner adds its own keys (owner/owner.ts `recipients`): an envelope
 * recipient its agents (recipient/envelope-recipients.ts), a template role `fixed` and a
 * pre-assigned person (template/template-roles.ts).
 */

const colorSchema = z.string().regex(/^#[0-9A-Fa-f]{6}$/, 'must be a hex colour like #2563EB');

/** Every key a recipient may be given, an envelope recipient's `agents` included. */
export const recipientShape = {
  type: z.enum(recipientTypes, { error: `must be one of ${recipientTypes.join(', ')}` }),
  identifier: identifierSlug,
  roleName: readableName(1, 100),
  order: boundedInteger(0, 1000),
  required: z.boolean({ error: 'must be true or false' }),
  color: colorSchema,
  /** An approver role: how many distinct agents must approve (1 ≤ quorum ≤ agents). */
  quorum: boundedInteger(1, MAX_AGENTS_PER_RECIPIENT),
  hostedById: z.string().nullable(),
  delegatedById: z.string().nullable(),
  /** simple (default), advanced or qualified: the signer also signs at a trust service (issue 35). */
  signatureLevel: z.enum(signatureLevels, { error: `must be one of ${signatureLevels.join(', ')}` }),
  /** The team's trust service to sign at; null: the team's first offering the level. */
  trustServiceId: identifierSlug.nullable(),
  agents: agentsSchema,
};

/** The shared keys of a new recipient, with their defaults. */
export const newRecipientShape = {
  type: recipientShape.type,
  identifier: recipientShape.identifier,
  roleName: recipientShape.roleName,
  order: recipientShape.order.default(0),
  required: recipientShape.required.default(true),
  color: recipientShape.color.optional(),
  quorum: recipientShape.quorum.default(1),
  hostedById: recipientShape.hostedById.optional(),
  delegatedById: recipientShape.delegatedById.optional(),
  signatureLevel: recipientShape.signatureLevel.default('simple'),
  trustServiceId: recipientShape.trustServiceId.optional(),
};

const { agents: _agents, ...changeShape } = recipientShape;
/** The shared keys of a change to a recipient (each optional when parsed). */
export const recipientChangeShape = changeShape;

export type NewRecipientKeys = z.output<z.ZodObject<typeof newRecipientShape>>;
export type RecipientKeyChange = Partial<z.output<z.ZodObject<typeof recipientChangeShape>>>;
