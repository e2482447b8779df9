/**
 * The platform's key level and the app roles of each HTTP route. With PUSHDRAIN_AUTH=entra the
 * platform lets every request through (`anonymous`) and the app requires a bearer token with one of
 * the route's roles; with `keys` or `both` the platform keeps requiring the route's function key.
 * Read at module load, as the trigger registrations are.
 */
import type { HttpTriggerOptions } from '@azure/functions';

import type { Role } from '../shared/auth/principal';
import { authMode } from '../shared/config/auth-settings';

export type KeyLevel = 'function' | 'admin';

export function authLevel(level: KeyLevel): NonNullable<HttpTriggerOptions['authLevel']> {
  return authMode() === 'entra' ? 'anonymous' : level;
}

/** Of these roles the caller needs one; see docs/SECURITY.md for what each role may do. */
export const ROUTE_ROLES = {
  submit: ['Batches.Submit'],
  /** A submitter reads its own batches, a reader every batch. */
  readBatch: ['Batches.Read', 'Batches.Submit'],
  /** GET /api/batches: a submitter lists its own batches, a reader every batch. */
  listBatches: ['Batches.Read', 'Batches.Submit'],
  status: ['Batches.Read'],
  admin: ['Operations.Admin'],
} as const satisfies Record<string, readonly Role[]>;

/**
 * Who may call each HTTP function when tokens are checked, by function name: its roles, or `open`
 * (no credential at all). The route helper (http-route.ts) authorizes with these roles, and it is
 * what `npm start` prints beside each route; a test holds it against the registered routes, so a
 * route added or renamed without an entry here fails there.
 */
const ACCESS = {
  postBatch: ROUTE_ROLES.submit,
  listBatches: ROUTE_ROLES.listBatches,
  getBatch: ROUTE_ROLES.readBatch,
  getBatchReport: ROUTE_ROLES.readBatch,
  getBatchTimeline: ROUTE_ROLES.readBatch,
  opsStatus: ROUTE_ROLES.status,
  opsRedrive: ROUTE_ROLES.admin,
  opsWebhookTest: ROUTE_ROLES.admin,
  health: 'open',
  dashboard: 'open',
  eventKeys: 'open',
  openApiDocument: 'open',
} as const satisfies Record<string, readonly Role[] | 'open'>;

export const FUNCTION_ACCESS: Readonly<Record<string, readonly Role[] | 'open'>> = ACCESS;

type HttpFunction = keyof typeof ACCESS;
/** An HTTP function that takes a credential (roles, or the route's function key). */
export type GuardedFunction = { [K in HttpFunction]: (typeof ACCESS)[K] extends 'open' ? never : K }[HttpFunction];
/** An HTTP function anyone may call: it answers from memory, with nothing to protect. */
export type OpenFunction = Exclude<HttpFunction, GuardedFunction>;

/** The roles of a guarded function (one of them is required). */
export function rolesOf(name: GuardedFunction): readonly Role[] {
  return ACCESS[name];
}
