/**
 * `pushdrain`: the operator's command line. Talks HTTP to the app (local or Azure) with the
 * function key; `redrive` uses the admin key. Argument parsing is commander's; exit codes are
 * in exit-codes.ts. Nothing here is part of the Function App.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';

import type { Role } from '../../shared/auth/principal';
import { parseMe } from './callback-verifier';
import { callbacksVerify } from './callbacks';
import { ApiClient, CliError } from './client';
import { batches, batchStatus, type Ctx, queues, redrive, redriveDeadLetters, report, systemStatus } from './commands';
import { devToken } from './dev-token';
import { bearerSource, describeToken } from './entra-token';
import { EXIT } from './exit-codes';
import { painter } from './output';
import { SAMPLE_MAX, writeSample } from './sample';
import { describeRejection, submit } from './submit';
import { verify, type VerifyOptions } from './verify';
import { webhooksTest } from './webhooks';

interface Globals {
  url: string;
  key?: string;
  adminKey?: string;
  json?: boolean;
  auth: 'keys' | 'entra';
  token?: string;
  scope?: string;
  deviceCode?: boolean;
  tenant?: string;
  verbose?: boolean;
}

const wholeNumber =
  (name: string) =>
  (v: string): number => {
    if (!/^\d+$/.test(v)) throw new InvalidArgumentError(`${name} must be a whole number`);
    return Number(v);
  };

/** dist/tools/cli → the package's own package.json. */
function version(): string {
  try {
    return (JSON.parse(readFileSync(join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string })
      .version;
  } catch {
    return 'unknown';
  }
}

function context(cmd: Command): Ctx {
  const g = cmd.optsWithGlobals<Globals>();
  const say = (line: string): void => void process.stderr.write(`${line}\n`);
  let bearer: (() => Promise<string>) | undefined;
  if (g.auth === 'entra') {
    const source = bearerSource(
      {
        ...(g.token ? { token: g.token } : {}),
        ...(g.scope ? { scope: g.scope } : {}),
        ...(g.tenant ? { tenant: g.tenant } : {}),
        deviceCode: g.deviceCode === true,
      },
      say,
    );
    let told = false;
    bearer = async () => {
      const token = await source();
      if (g.verbose && !told) say(describeToken(token));
      told = true;
      return token;
    };
  }
  return {
    client: new ApiClient({ url: g.url, ...(g.key ? { key: g.key } : {}), ...(bearer ? { bearer } : {}) }),
    json: g.json === true,
    paint: painter(process.stdout),
    adminKey: g.adminKey ?? g.key,
  };
}

export function program(run: (code: number) => void): Command {
  const p = new Command('pushdrain')
    .description('Operate a pushdrain app: submit batches and follow them, read reports, watch queues, redrive poison.')
    .version(version())
    .addOption(new Option('--url <url>', 'the app').env('PUSHDRAIN_URL').default('http://localhost:7071'))
    .addOption(
      new Option('--key <key>', 'function key, sent as x-functions-key (any key works locally)').env('PUSHDRAIN_KEY'),
    )
    .addOption(
      new Option('--admin-key <key>', 'admin (master) key, for redrive; defaults to --key').env('PUSHDRAIN_ADMIN_KEY'),
    )
    .addOption(
      new Option('--auth <mode>', 'keys: send --key; entra: send a Microsoft Entra ID bearer token')
        .choices(['keys', 'entra'])
        .env('PUSHDRAIN_CLI_AUTH')
        .default('keys'),
    )
    .addOption(
      new Option('--token <jwt>', 'with --auth entra: this token (a dev token locally)').env('PUSHDRAIN_TOKEN'),
    )
    .addOption(
      new Option('--scope <scope>', "with --auth entra: the API's scope, e.g. api://pushdrain-<env>/.default").env(
        'PUSHDRAIN_API_SCOPE',
      ),
    )
    .option('--device-code', 'with --auth entra: sign in with a device code instead of DefaultAzureCredential')
    .addOption(new Option('--tenant <id>', 'with --auth entra: the tenant to sign in to').env('AZURE_TENANT_ID'))
    .option('--verbose', 'say who the CLI acts as (with --auth entra)')
    .option('--json', 'machine-readable output on stdout, no progress')
    .showHelpAfterError('(pushdrain --help lists the commands and options)')
    .exitOverride();

  p.command('submit')
    .description(
      'submit a batch file (NDJSON or a JSON array; `-` reads stdin), gzip-compressed, and follow it to the end',
    )
    .argument('<file>', 'batch file, or - for stdin')
    .addOption(
      new Option('--format <format>', 'body format (default: from the file name, else sniffed)').choices([
        'ndjson',
        'json',
      ]),
    )
    .option('--idempotency-key <key>', 'use this Idempotency-Key instead of one derived from the content')
    .option('--no-idempotency', 'send no Idempotency-Key (a re-run makes a new batch)')
    .option(
      '--callback <url>',
      "send the batch's completed/failed event to this URL too (Callback-Url; allowlisted origins only)",
    )
    .option('--no-wait', 'return once the batch is accepted (202)')
    .option('--timeout <seconds>', 'stop waiting after this long', wholeNumber('--timeout'), 600)
    .option(
      '--poll <ms>',
      "shortest wait between status polls; it grows with the batch's age and while nothing changes, up to 5 s",
      wholeNumber('--poll'),
      500,
    )
    .option('--quiet', 'no progress bars')
    .action(
      async (
        file: string,
        o: {
          format?: 'ndjson' | 'json';
          idempotencyKey?: string;
          idempotency: boolean;
          callback?: string;
          wait: boolean;
          timeout: number;
          poll: number;
          quiet?: boolean;
        },
        cmd: Command,
      ) => {
        const ctx = context(cmd);
        const outcome = await submit(
          ctx.client,
          file,
          {
            ...(o.format ? { format: o.format } : {}),
            idempotencyKey: o.idempotency ? o.idempotencyKey : false,
            ...(o.callback !== undefined ? { callbackUrl: o.callback } : {}),
            wait: o.wait,
            timeoutSeconds: o.timeout,
            pollMs: Math.max(100, o.poll),
            json: ctx.json,
            progress: !ctx.json && o.quiet !== true,
          },
          ctx.paint,
        );
        if (ctx.json)
          console.log(
            JSON.stringify(
              {
                ...outcome.accepted,
                ...(outcome.final ? { final: outcome.final } : {}),
                ...(outcome.report
                  ? {
                      totals: outcome.report.totals,
                      report: ctx.client.url(`/api/batches/${outcome.accepted.batchId}/report`),
                    }
                  : {}),
              },
              null,
              2,
            ),
          );
        else if (!o.wait) console.log(outcome.accepted.batchId);
        run(outcome.exitCode);
      },
    );

  p.command('sample')
    .description(
      'write a valid NDJSON batch of seeded transactions, to submit (e.g. pushdrain sample 10000 > batch.ndjson)',
    )
    .argument('[count]', `how many transactions (1-${SAMPLE_MAX})`, wholeNumber('count'), 10_000)
    .option('--seed <n>', 'another seed, another batch (same seed, same file)', wholeNumber('--seed'), 1)
    .option('-o, --output <file>', 'write to FILE instead of stdout')
    .action(async (count: number, o: { seed: number; output?: string }, cmd: Command) => {
      if (count < 1 || count > SAMPLE_MAX)
        cmd.error(`error: count must be 1 to ${SAMPLE_MAX}`, { exitCode: EXIT.usage, code: 'pushdrain.sampleCount' });
      await writeSample(count, o.seed, o.output);
      run(EXIT.ok);
    });

  p.command('status')
    .description('one batch (with BATCH), or the whole system')
    .argument('[batch]', 'batch id')
    .action(async (batch: string | undefined, _o: unknown, cmd: Command) =>
      run(batch ? await batchStatus(context(cmd), batch) : await systemStatus(context(cmd))),
    );

  p.command('report')
    .description("a completed batch's report: totals and rows (JSON), or CSV")
    .argument('<batch>', 'batch id')
    .option('--csv', 'CSV instead of JSON')
    .option('-o, --output <file>', 'write to FILE instead of stdout')
    .action(async (batch: string, o: { csv?: boolean; output?: string }, cmd: Command) =>
      run(await report(context(cmd), batch, o.csv === true, o.output)),
    );

  p.command('verify')
    .description(
      "reconcile a completed batch: the report's digest against Repr-Digest, the status (and a received event), its totals against the control totals, and those against the submitted file",
    )
    .argument('<batch>', 'batch id')
    .argument('[file]', 'the file that was submitted (JSON or NDJSON, optionally gzipped)')
    .option('--event <file>', 'the batch.completed event as received (CloudEvent JSON), its signature already checked')
    .action(async (batch: string, file: string | undefined, o: VerifyOptions, cmd: Command) =>
      run(await verify(context(cmd), batch, file, o)),
    );

  p.command('batches')
    .description(
      'the newest batches you may see, with their progress and latency (a submitter: its own; a reader: all)',
    )
    .option('--limit <n>', 'how many (1-100, default 20)', wholeNumber('--limit'))
    .option('--cursor <next>', "the page after this one (the previous page's next)")
    .action(async (o: { limit?: number; cursor?: string }, cmd: Command) => run(await batches(context(cmd), o)));

  p.command('queues')
    .description('queue depths and oldest ages, poison, Service Bus dead letters, drains running')
    .action(async (_o: unknown, cmd: Command) => run(await queues(context(cmd))));

  p.command('redrive')
    .description(
      'move poison messages back to their queues after a fix, or resubmit Service Bus dead letters (admin key)',
    )
    .option('--queue <queue>', 'only this source queue (e.g. work-0)')
    .option('--batch <batchId>', 'only messages of this batch')
    .addOption(
      new Option(
        '--dead-letters',
        "resubmit the Service Bus dead letters of the app's subscriptions and batch-watchdog instead of Storage poison",
      ).conflicts(['queue', 'batch']),
    )
    .option(
      '--entity <entity>',
      'with --dead-letters: only this entity (e.g. work-detected/Subscriptions/drain, batch-watchdog)',
    )
    .option('--max <n>', 'at most this many (default 1000)', wholeNumber('--max'))
    .action(
      async (
        o: { queue?: string; batch?: string; deadLetters?: boolean; entity?: string; max?: number },
        cmd: Command,
      ) => {
        if (o.entity !== undefined && o.deadLetters !== true)
          cmd.error("error: option '--entity <entity>' needs '--dead-letters'", {
            exitCode: EXIT.usage,
            code: 'pushdrain.entityWithoutDeadLetters',
          });
        run(o.deadLetters === true ? await redriveDeadLetters(context(cmd), o) : await redrive(context(cmd), o));
      },
    );

  p.command('webhooks')
    .description("the app's webhooks (PUSHDRAIN_WEBHOOK_URL)")
    .command('test')
    .description('send one signed test event to every webhook and print what each answered (admin key)')
    .action(async (_o: unknown, cmd: Command) => run(await webhooksTest(context(cmd))));

  p.command('callbacks')
    .description('callbacks a client receives (Callback-Url)')
    .command('verify')
    .description("check a received callback as README's receiver does: signature, timestamp, and that it is yours")
    .argument('<body>', "the request's body as received (a file, or - for stdin)")
    .requiredOption('--headers <file>', "the request's headers, a JSON object")
    .requiredOption('--me <who>', 'who you are: app:<client id>, user:<object id>, or key', (v: string) => {
      const me = parseMe(v);
      if (!me) throw new InvalidArgumentError('must be app:<client id>, user:<object id> or key');
      return me;
    })
    .action(async (body: string, o: { headers: string; me: NonNullable<ReturnType<typeof parseMe>> }, cmd: Command) =>
      run(await callbacksVerify(context(cmd), body, o)),
    );

  p.command('dev-token')
    .description('mint a token of the local issuer (npm start -- --auth entra) for a role: local development only')
    .addOption(
      new Option('--role <role...>', 'app role(s) the token carries')
        .choices(['Batches.Submit', 'Batches.Read', 'Operations.Admin'])
        .makeOptionMandatory(),
    )
    .requiredOption('--name <name>', 'who the token is for; the same name always gets the same object id')
    .option(
      '--app',
      "an app's token (idtyp app, no name, no scp) instead of a person's (scp with the API's user_impersonation)",
    )
    .option('--lifetime <seconds>', 'how long the token is valid', wholeNumber('--lifetime'), 3600)
    .action(async (o: { role: Role[]; name: string; app?: boolean; lifetime: number }) => {
      console.log(await devToken(o));
      run(EXIT.ok);
    });

  return p;
}

/** Prints a failure the way the chosen output mode wants it and returns the exit code. */
function fail(e: unknown, json: boolean): number {
  if (e instanceof CommanderError) {
    // Help and version asked for (`--help`, `help`, `--version`) are exits too, with commander's exit
    // code 0; it has already printed them. No command at all prints the usage to stderr with 1: a usage error.
    return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
  }
  if (e instanceof CliError) {
    if (json)
      console.log(
        JSON.stringify(
          {
            error: e.body?.error ?? 'cli_error',
            message: e.message,
            ...(e.body?.details ? { details: e.body.details } : {}),
            ...(e.httpStatus ? { httpStatus: e.httpStatus } : {}),
            exitCode: e.exitCode,
          },
          null,
          2,
        ),
      );
    const text =
      e.exitCode === EXIT.rejected && e.body && !e.message.startsWith('rejected')
        ? describeRejection(e.body, e.httpStatus ?? 0).join('\n')
        : e.message;
    process.stderr.write(`pushdrain: ${text}\n`);
    return e.exitCode;
  }
  process.stderr.write(`pushdrain: unexpected error: ${(e as Error).stack ?? String(e)}\n`);
  return EXIT.error;
}

export async function main(argv: readonly string[]): Promise<number> {
  let code: number = EXIT.ok;
  const p = program((c) => (code = c));
  try {
    await p.parseAsync([...argv]);
  } catch (e) {
    code = fail(e, argv.includes('--json'));
  }
  return code;
}
