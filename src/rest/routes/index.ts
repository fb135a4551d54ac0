import type { RestRoute } from '../router.ts';
import { artefactRoutes } from './artefacts.ts';
import { auditRoutes } from './audit.ts';
import { bulkSendRoutes } from './bulk-sends.ts';
import { contactRoutes } from './contacts.ts';
import { documentRoutes } from './documents.ts';
import { envelopeRoutes } from './envelopes.ts';
import { fieldRoutes } from './fields.ts';
import { publicLinkRoutes } from './public-links.ts';
import { recipientRoutes } from './recipients.ts';
import { referenceRoutes } from './reference.ts';
import { teamRoutes } from './team.ts';
import { templateRoutes } from './templates.ts';
import { webhookRoutes } from './webhooks.ts';
import { workflowRoutes } from './workflow.ts';

/** Every REST route, by feature. */
export const restRoutes: RestRoute[] = [
  ...teamRoutes,
  ...envelopeRoutes,
  ...documentRoutes.envelope,
  ...recipientRoutes.envelope,
  ...fieldRoutes.envelope,
  ...auditRoutes,
  ...artefactRoutes,
  ...contactRoutes,
  ...templateRoutes,
  ...workflowRoutes,
  ...webhookRoutes,
  ...bulkSendRoutes,
  ...publicLinkRoutes,
];
// The OpenAPI document and the reference page describe the whole table, themselves included.
restRoutes.push(...referenceRoutes(() => restRoutes));
