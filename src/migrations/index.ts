import { Migration20261122001538_initial } from './Migration20261122001538_initial.ts';
/** Every committed migration, in order. `npm run migration:create` appends to this list. */
export const migrations = [Migration20261122001538_initial];
