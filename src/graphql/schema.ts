import { builder } from './builder.ts';
import './scalars.ts';
import './types/team.ts';

/** The whole GraphQL schema; `npm run schema:print` writes it to schema.graphql. */
export const schema = builder.toSchema({ sortSchema: false });
