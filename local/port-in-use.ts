/**
 * `npm start` runs four listeners; a port that is already taken must say which one it is and
 * which setting moves it, not surface as a bare EADDRINUSE.
 */
export class PortInUseError extends Error {
  constructor(
    readonly component: string,
    readonly port: number,
    readonly setting: string,
  ) {
    super(`${component} cannot listen on port ${port}: it is already in use (another npm start?). Set ${setting} to a free port, or ${setting}=0 for any.`);
    this.name = 'PortInUseError';
  }
}

export function isAddressInUse(e: unknown): e is { code: 'EADDRINUSE'; port?: number } {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'EADDRINUSE';
}

/** Runs `start`; an address-in-use failure becomes a PortInUseError for `component` and `setting`. */
export async function listening<T>(component: string, setting: string, port: number, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (e) {
    if (isAddressInUse(e)) throw new PortInUseError(component, e.port ?? port, setting);
    throw e;
  }
}
