/**
 * Prints the captured registrations as JSON (handlers left out). Run in its own process:
 * the stand-in must be in place before anything loads @azure/functions.
 */
import { loadApp, triggerOf } from './registry';

const registry = loadApp();
const out = registry.functions.map((f) => ({ name: f.name, trigger: triggerOf(f), bindings: Object.values(f.bindings) }));
process.stdout.write(JSON.stringify({ functions: out, hooks: Object.keys(registry.hooks) }, null, 2) + '\n');
