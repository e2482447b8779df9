/**
 * `npm start` runs four listeners; a port that is already taken must say which one it is and
 * which setting moves it, not surface as a bare EADDRINUSE.
 */
class PortInUseError extends Error {
  constructor(
    readonly component: string,
    readonly port: number,
    readonly setting: string,
  ) {
    super(
      `${component} cannot listen on port ${port}: it is already in use (another npm start?). Set ${setting} to a free port, or ${setting}=0 for any.`,
    );
    this.name = 'PortInUseError';
  }
}

function isAddressInUse(e: unknown): e is { code: 'EADDRINUSE'; port?: number } {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'EADDRINUSE';
}

/** A port that `npm start` listens on, what listens there and which setting moves it. */
export interface Listener {
  component: string;
  setting: string;
  port: number;
}

/**
 * Runs `start`; an address-in-use failure becomes a PortInUseError for the listener on the port
 * that failed (the first one when the error does not say, or several share the port).
 */
export async function listening<T>(listeners: readonly [Listener, ...Listener[]], start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (e) {
    if (!isAddressInUse(e)) throw e;
    const at = listeners.find((l) => l.port === e.port) ?? listeners[0];
    throw new PortInUseError(at.component, e.port ?? at.port, at.setting);
  }
}
