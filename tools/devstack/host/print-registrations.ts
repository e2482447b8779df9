/**
 * Prints the captured registrations as JSON (handlers left out), and the route table the local
 * host compiles from them, so that a test can hold the two against each other. Run in its own
 * process: the stand-in must be in place before anything loads @azure/functions.
 * Usage: node print-registrations.js [appRoot]; appRoot defaults to this repository (a packaging
 * test passes the folder of a deployable package instead).
 */
import { findRepoRoot, loadApp, triggerOf } from './registry';
import { buildRoutes, routePrefix } from './routes';

const root = process.argv[2] ?? findRepoRoot();
const registry = loadApp(root);
const functions = registry.functions.map((f) => ({
  name: f.name,
  trigger: triggerOf(f),
  bindings: Object.values(f.bindings),
}));
const routes = buildRoutes(registry, routePrefix(root)).map(({ functionName, template, methods, authLevel }) => ({
  functionName,
  template,
  methods,
  authLevel,
}));
process.stdout.write(JSON.stringify({ functions, hooks: Object.keys(registry.hooks), routes }, null, 2) + '\n');
