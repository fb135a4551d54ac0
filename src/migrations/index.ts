import { Migration20261122001538_initial } from './Migration20261122001538_initial.ts';
import { Migration20261122003526_listing_indexes } from './Migration20261122003526_listing_indexes.ts';

/** Every committed migration, in order. `npm run migration:create` appends to this list. */
export const migrations = [Migration20261122001538_initial, Migration20261122003526_listing_indexes];
