import { readRecipient, readRecipients } from '../../domain/owner/owner.read.ts';
import { createRecipientInput, updateRecipientInput } from '../../domain/recipient/envelope-recipients.ts';
import { addRecipient, deleteRecipient, updateRecipient } from '../../domain/recipient/recipient.service.ts';
import { createRoleInput, updateRoleInput } from '../../domain/template/template-roles.ts';
import { readJsonObject } from '../../http/body.ts';
import { InvalidRequestError } from '../../shared/errors.ts';
import { CORRECTION_NOTE, OWNER_CHANGE_ERRORS, ownerContentRoutes, ownerInPath } from '../owner-routes.ts';
import type { RestHttpRequest } from '../router.ts';

/** The spec wraps one recipient in `{ recipient: {...} }` (a template's role too). */
async function readRecipientBody(request: RestHttpRequest): Promise<unknown> {
  const body = await readJsonObject(request);
  if (typeof body.recipient !== 'object' || body.recipient === null || Array.isArray(body.recipient)) {
    throw new InvalidRequestError([{ path: 'recipient', message: 'must be an object with the recipient' }]);
  }
  const extra = Object.keys(body).filter((key) => key !== 'recipient');
  if (extra.length > 0) throw new InvalidRequestError(extra.map((key) => ({ path: key, message: 'is not a known property' })));
  return body.recipient;
}

/** What an envelope recipient's read adds for approver roles (README, approvers). */
const APPROVALS_NOTE =
  'Each recipient has its agents and `approvals`: for an approver role, `[{ agentId, name, approvedAt, comment }]`, one per agent that approved, oldest first (`name` is the person who approved); empty for every other type.';

const BOUND_ERRORS = ['Recipient.HostRecipientBound', 'Recipient.DelegatorRecipientBound'];

/** The interface spec (docs/reference/interface-spec.md) §4.3, §4.7 and docs/reference/contract.md §5: recipients of an envelope, roles of a template. */
export const recipientRoutes = ownerContentRoutes([
  {
    method: 'POST',
    path: '/recipients',
    docs: {
      envelope: {
        summary: 'Add a recipient role with its people',
        body: {
          schema: createRecipientInput,
          wrap: 'recipient',
          example: { recipient: { type: 'signer', identifier: 'buyer', roleName: 'Buyer', order: 1, agents: [{ info: { name: 'Ada Lovelace', email: 'ada@example.com' } }] } },
        },
        isIdempotent: true,
        description: CORRECTION_NOTE.recipients,
        errors: [
          ...OWNER_CHANGE_ERRORS.envelope,
          'Recipient.AlreadyCompleted',
          'Envelope.CapacityExceeded',
          'Recipient.DuplicateIdentifier',
          'Recipient.QuorumExceedsAgents',
          'Recipient.QuorumNotApprover',
          'Contact.NotFound',
          'ContactGroup.NotFound',
          'User.NotFound',
        ],
      },
      template: {
        summary: 'Add a template role',
        body: { schema: createRoleInput, wrap: 'recipient', example: { recipient: { type: 'signer', identifier: 'client', roleName: 'Client' } } },
        isIdempotent: true,
        errors: [...OWNER_CHANGE_ERRORS.template, 'Template.CapacityExceeded', 'Recipient.DuplicateIdentifier', 'Recipient.QuorumNotApprover'],
      },
    },
    async handler({ request, params, context }) {
      const recipient = await addRecipient(context, { owner: ownerInPath(params), input: await readRecipientBody(request), idempotencyKey: context.idempotencyKey });
      return { recipient };
    },
  },
  {
    method: 'GET',
    path: '/recipients',
    docs: { envelope: { summary: 'List an envelope’s recipients', description: APPROVALS_NOTE } },
    async handler({ params, context }) {
      return { recipients: await readRecipients(context, { owner: ownerInPath(params) }) };
    },
  },
  {
    method: 'GET',
    path: '/recipients/:recipientId',
    docs: { envelope: { summary: 'Read a recipient', description: APPROVALS_NOTE } },
    async handler({ params, context }) {
      return { recipient: await readRecipient(context, { owner: ownerInPath(params), recipientId: params.recipientId }) };
    },
  },
  {
    method: 'PATCH',
    path: '/recipients/:recipientId',
    docs: {
      envelope: {
        summary: 'Change a recipient of a draft',
        body: { schema: updateRecipientInput, wrap: 'recipient', example: { recipient: { roleName: 'Purchaser' } } },
        description: CORRECTION_NOTE.recipients,
        errors: [
          ...OWNER_CHANGE_ERRORS.envelope,
          'Recipient.AlreadyCompleted',
          'Recipient.HasFields',
          'Field.NotAllowedForRecipient',
          'Recipient.DuplicateIdentifier',
          'Recipient.QuorumExceedsAgents',
          'Recipient.QuorumNotApprover',
        ],
      },
      template: {
        summary: 'Change a template role',
        body: { schema: updateRoleInput, wrap: 'recipient', example: { recipient: { fixed: true } } },
        errors: [...OWNER_CHANGE_ERRORS.template, 'Recipient.HasFields', 'Field.NotAllowedForRecipient', 'Recipient.QuorumNotApprover'],
      },
    },
    async handler({ request, params, context }) {
      const recipient = await updateRecipient(context, { owner: ownerInPath(params), recipientId: params.recipientId, input: await readRecipientBody(request) });
      return { recipient };
    },
  },
  {
    method: 'DELETE',
    path: '/recipients/:recipientId',
    docs: {
      envelope: {
        summary: 'Remove a recipient (and its fields) from a draft, or a sent envelope',
        description: CORRECTION_NOTE.recipients,
        errors: [...OWNER_CHANGE_ERRORS.envelope, 'Recipient.AlreadyCompleted', ...BOUND_ERRORS, 'Field.InUse'],
      },
      template: { summary: 'Remove a template role (and its fields)', errors: [...OWNER_CHANGE_ERRORS.template, ...BOUND_ERRORS, 'Field.InUse'] },
    },
    async handler({ params, context }) {
      await deleteRecipient(context, { owner: ownerInPath(params), recipientId: params.recipientId });
      return { deleted: true };
    },
  },
]);
