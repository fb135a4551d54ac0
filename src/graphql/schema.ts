import { builder } from './builder.ts';
import './scalars.ts';
import './types/team.ts';
import './types/envelope.ts';
import './types/document.ts';
import './types/recipient.ts';
import './types/field.ts';
import './types/audit.ts';

/** The whole GraphQL schema; `npm run schema:print` writes it to schema.graphql. */
export const schema = builder.toSchema({ sortSchema: false });
