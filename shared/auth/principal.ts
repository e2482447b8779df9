/**
 * Who calls, and what that caller may see. Roles are the API's app roles (the `roles` claim of an
 * Entra token); a function-key holder (PUSHDRAIN_AUTH=keys, or `both` without a token) has no
 * identity and holds every role its key level let through the platform.
 */
export const ROLES = ['Batches.Submit', 'Batches.Read', 'Operations.Admin'] as const;

export type Role = (typeof ROLES)[number];

/** The principal recorded on a batch: its manifest, report, status and log lines. */
export interface Submitter {
  /** The principal's object id in the tenant (`oid`). */
  objectId: string;
  /** The client application the token was issued to (`azp`, or `appid` in v1 tokens). */
  appId?: string;
  /** A user's display name (`name`); a service principal's token carries none. */
  name?: string;
}

export type Principal =
  { kind: 'token'; submitter: Submitter; roles: ReadonlySet<Role> } | { kind: 'key'; roles: ReadonlySet<Role> };

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** A function-key holder: the platform checked the key, the app has nobody to tell apart. */
export const KEY_HOLDER: Principal = { kind: 'key', roles: new Set(ROLES) };

export function holdsAny(p: Principal, anyOf: readonly Role[]): boolean {
  return anyOf.some((r) => p.roles.has(r));
}

/** What a batch records of whoever submitted it: nothing for a key holder. */
export function submitterOf(p: Principal): Submitter | undefined {
  return p.kind === 'token' ? p.submitter : undefined;
}

/**
 * May `p` see a batch submitted by `owner`? A reader sees every batch; a submitter only its own
 * (a batch without a recorded submitter belongs to no token holder).
 */
export function maySee(p: Principal, owner: Submitter | undefined): boolean {
  if (p.roles.has('Batches.Read')) return true;
  if (p.kind === 'key') return false;
  return p.roles.has('Batches.Submit') && owner !== undefined && owner.objectId === p.submitter.objectId;
}

/** For log lines: the name if there is one, always the object id (never a token). */
export function describeSubmitter(s: Submitter | undefined): string {
  if (!s) return 'a function-key holder';
  return `${s.name ? `${s.name} ` : ''}(oid ${s.objectId}${s.appId ? `, app ${s.appId}` : ''})`;
}
