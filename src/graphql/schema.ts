import type { RequestContext } from '../context.ts';
import { builder } from './builder.ts';
import './scalars.ts';
import './types/team.ts';
import './types/envelope.ts';
import './types/document.ts';
import './types/recipient.ts';
import './types/field.ts';
import './types/audit.ts';
import './types/artefact.ts';
import './types/contact.ts';
import './types/template.ts';
import './types/signing.ts';
import './types/attachment.ts';
import './types/live.ts';
import './types/webhook.ts';
import './types/public-link.ts';
import './types/bulk-send.ts';

/** The whole GraphQL schema; `npm run schema:print` writes it to schema.graphql. */
export const schema = builder.toSchema({ sortSchema: false });

/**
 * Mutations run one after another, each with its selection resolved before the next starts. A
 * mutation changes what the entity manager's identity map has already seen, so each mutation
 * starts from an empty one and finds the rows as the mutations before it left them. (Answers come
 * from the read model, read after the mutation's own change, so `a: updateField(...)
 * b: updateField(...)` shows b's views, not a's.) Done once here rather than in every resolver.
 */
for (const field of Object.values(schema.getMutationType()?.getFields() ?? {})) {
  const resolve = field.resolve;
  if (!resolve) continue;
  field.resolve = (root, args, context: RequestContext, info) => {
    context.em.clear();
    return resolve(root, args, context, info);
  };
}
