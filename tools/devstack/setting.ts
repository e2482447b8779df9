/**
 * Whether a connection setting is given, plainly or in its identity-based `name__property` form
 * (as the Functions host reads it): the local launchers embed a stand-in only when it is not.
 */
export function isSet(env: NodeJS.ProcessEnv, name: string): boolean {
  return Object.keys(env).some((k) => (k === name || k.startsWith(`${name}__`)) && (env[k] ?? '') !== '');
}
