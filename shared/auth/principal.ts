/**
 * Who calls, and what that caller may see. Roles are the API's app roles (the `roles` claim of an
 * Entra token); a function-key holder (PUSHDRAIN_AUTH=keys, or `both` without a token) has no
 * identity and holds the key holder's roles (every role in `keys`: the key level let it through
 * the platform; PUSHDRAIN_AUTH_KEY_ROLES in `both`).
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

/**
 * Whom a batch's events belong to, as its callback names it inside what is signed: a user by its
 * object id (`oid`), an application by its application (client) id (`azp`/`appid`: the id the
 * client configured itself with), a function-key holder (no identity: every key holder is the
 * same principal to the app), or the sweep (a blob in `incoming/`, which takes no callback). A
 * receiver compares it with its own id, so an event for one client fails every other client's check.
 */
export type Recipient = { kind: 'user' | 'app'; id: string } | { kind: 'key' | 'sweep' };

export type Principal =
  | { kind: 'token'; submitter: Submitter; roles: ReadonlySet<Role>; tokenKind: 'delegated' | 'app' }
  | { kind: 'key'; roles: ReadonlySet<Role> };

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** A function-key holder: the platform checked the key, the app has nobody to tell apart. */
export function keyHolder(roles: ReadonlySet<Role>): Principal {
  return { kind: 'key', roles };
}

export function holdsAny(p: Principal, anyOf: readonly Role[]): boolean {
  return anyOf.some((r) => p.roles.has(r));
}

/** What a batch records of whoever submitted it: nothing for a key holder. */
export function submitterOf(p: Principal): Submitter | undefined {
  return p.kind === 'token' ? p.submitter : undefined;
}

/** The recipient of the batches `p` submits over HTTP (see Recipient). */
export function recipientOf(p: Principal): Recipient {
  if (p.kind === 'key') return { kind: 'key' };
  if (p.tokenKind === 'app' && p.submitter.appId) return { kind: 'app', id: p.submitter.appId };
  return { kind: 'user', id: p.submitter.objectId };
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

// C0 and C1 controls (newlines among them), DEL, the Unicode line and paragraph separators and the
// bidirectional overrides: a claim carrying one could forge or reorder a log line.
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** A claim's text made safe for a log line: control characters removed, at most `max` characters. */
export function printable(value: string, max = 200): string {
  return value.replace(CONTROL, '').slice(0, max);
}

/**
 * For log lines: the name if there is one, always the object id (never a token). Stripped again
 * here: a manifest written by an older version may hold a name that was not.
 */
export function describeSubmitter(s: Submitter | undefined): string {
  if (!s) return 'a function-key holder';
  const name = s.name ? printable(s.name) : '';
  const app = s.appId ? printable(s.appId, 64) : '';
  return `${name ? `${name} ` : ''}(oid ${printable(s.objectId, 64)}${app ? `, app ${app}` : ''})`;
}
