/**
 * Runs Azurite in a child that lives exactly as long as its parent: it sits in its own
 * process group (so a terminal's Ctrl-C reaches only the parent, which stops it after the
 * drains have handed their work back), and it exits when the IPC channel to the parent
 * closes (so a killed parent never leaves an orphan holding the ports).
 */
process.on('disconnect', () => process.kill(process.pid, 'SIGTERM'));
const [script, ...args] = process.argv.slice(2);
if (!script) throw new Error('usage: azurite-child <azurite.js> [args…]');
process.argv = [process.argv[0] as string, script, ...args];
// eslint-disable-next-line @typescript-eslint/no-require-imports
require(script);
