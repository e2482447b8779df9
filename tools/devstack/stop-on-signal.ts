/**
 * Ctrl-C and SIGTERM for the local launchers (`npm start`, with or without `--instances`, and the
 * standalone brokers): the first signal prints `announce`, runs `stop` once and exits 0 (1 if it
 * fails); a second signal while stopping exits at once with 130, for a user who will not wait.
 */
export function stopOnSignal(announce: (signal: string) => string, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: string): void => {
    if (stopping) {
      console.log('Forced exit.');
      process.exit(130);
    }
    stopping = true;
    console.log(announce(signal));
    stop().then(
      () => process.exit(0),
      (e: unknown) => {
        console.error(`shutdown failed: ${(e as Error).message}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => onSignal('SIGINT'));
  process.on('SIGTERM', () => onSignal('SIGTERM'));
}
