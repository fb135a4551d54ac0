import type { RestRoute } from '../router.ts';
import { teamRoutes } from './team.ts';

/** Every REST route, by feature. */
export const restRoutes: RestRoute[] = [...teamRoutes];
