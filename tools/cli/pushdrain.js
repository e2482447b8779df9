#!/usr/bin/env node
// The `pushdrain` command (package.json "bin"). The CLI is TypeScript compiled to dist/tools/cli/;
// this launcher only finds it, so a checkout that was not built yet gets a clear message.
'use strict';
const { join } = require('node:path');

let cli;
try {
  cli = require(join(__dirname, '..', '..', 'dist', 'tools', 'cli', 'main.js'));
} catch (e) {
  if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(join('dist', 'tools', 'cli', 'main.js'))) {
    process.stderr.write(
      `pushdrain: the CLI is not built yet: run \`npm run build\` in ${join(__dirname, '..', '..')}\n`,
    );
    process.exit(1);
  }
  throw e;
}
cli.main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (e) => {
    process.stderr.write(`pushdrain: ${e && e.stack ? e.stack : String(e)}\n`);
    process.exitCode = 1;
  },
);
