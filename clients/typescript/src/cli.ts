#!/usr/bin/env node
// warmpool: the claim API from a shell. Answers are JSON on stdout; a failure
// is JSON on stderr ({"error", "reason", "status"}) and an exit code that says
// what failed (EXIT below, and the README).
import { parseArgs } from 'node:util';
import { ClaimClient, type ClaimRequest } from './client.js';
import { EXIT, failure, UsageError } from './cli-failure.js';
import { defaultKubeconfigPath, readKubeContext, type KubeContext } from './kubeconfig.js';
import { listSandboxes } from './sandboxes.js';
import { defaultTokenSource, tokenFromFile, tokenFromKubeconfig, type TokenSource } from './token.js';

const USAGE = `usage: warmpool <command> [flags]

commands:
  claim --pool NAME | --env NAME [--scaling-group G] [--ttl SECONDS] [--claim-ref REF]
  get ID               a claim by sandbox id or claimRef (no token)
  renew ID [--ttl S]   a new lease from now
  release ID           release the sandbox
  list                 the namespace's claimed sandboxes (the Sandbox API, with the kubeconfig)

flags:
  --url URL            the claim API origin (WARMPOOL_CLAIMS_URL)
  -n, --namespace NS   (WARMPOOL_NAMESPACE, else the kubeconfig context's, else default)
  --token-file PATH    a bearer token file (else WARMPOOL_TOKEN, the file WARMPOOL_TOKEN_FILE,
                       the pod's ServiceAccount token, the kubeconfig's token)
  --kubeconfig PATH    (KUBECONFIG's first file, else ~/.kube/config)   --context NAME
                       (either one: the token is the kubeconfig's, whatever the environment says)
  --timeout SECONDS    per attempt (default 30)            --attempts N  (default 5)
`;

const HELP = Symbol('help');

const OPTIONS = {
  url: { type: 'string' },
  namespace: { type: 'string', short: 'n' },
  'token-file': { type: 'string' },
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  timeout: { type: 'string' },
  attempts: { type: 'string' },
  pool: { type: 'string' },
  env: { type: 'string' },
  'scaling-group': { type: 'string' },
  ttl: { type: 'string' },
  'claim-ref': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Flags = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--${flag} must be a positive integer, not ${value}`);
  return n;
}

function kubeContext(flags: Flags): KubeContext | undefined {
  try {
    return readKubeContext(flags.kubeconfig ?? defaultKubeconfigPath(), flags.context);
  } catch {
    return undefined;
  }
}

function tokenSource(flags: Flags): TokenSource {
  if (flags['token-file'] !== undefined) return tokenFromFile(flags['token-file']);
  if (flags.kubeconfig !== undefined || flags.context !== undefined)
    return tokenFromKubeconfig(flags.kubeconfig ?? defaultKubeconfigPath(), flags.context);
  return defaultTokenSource();
}

function namespaceOf(flags: Flags): string {
  return flags.namespace ?? process.env['WARMPOOL_NAMESPACE'] ?? kubeContext(flags)?.namespace ?? 'default';
}

function clientOf(flags: Flags): ClaimClient {
  const url = flags.url ?? process.env['WARMPOOL_CLAIMS_URL'];
  if (url === undefined) throw new UsageError('give the claim API with --url or WARMPOOL_CLAIMS_URL');
  const timeout = positiveInt('timeout', flags.timeout);
  const attempts = positiveInt('attempts', flags.attempts);
  return new ClaimClient({
    url,
    namespace: namespaceOf(flags),
    token: tokenSource(flags),
    ...(timeout === undefined ? {} : { timeoutMs: timeout * 1000 }),
    ...(attempts === undefined ? {} : { retry: { attempts } }),
    onRetry: (attempt, error, delayMs) =>
      process.stderr.write(
        `${JSON.stringify({ retry: attempt, after: Math.round(delayMs), error: (error as Error).message })}\n`,
      ),
  });
}

function claimRequest(flags: Flags): ClaimRequest {
  if ((flags.pool === undefined) === (flags.env === undefined))
    throw new UsageError('give exactly one of --pool and --env');
  const ttlSeconds = positiveInt('ttl', flags.ttl);
  const common = {
    ...(ttlSeconds === undefined ? {} : { ttlSeconds }),
    ...(flags['claim-ref'] === undefined ? {} : { claimRef: flags['claim-ref'] }),
  };
  if (flags.pool !== undefined) return { warmPool: flags.pool, ...common };
  return {
    env: flags.env as string,
    ...(flags['scaling-group'] === undefined ? {} : { scalingGroup: flags['scaling-group'] }),
    ...common,
  };
}

function one(positionals: string[], command: string): string {
  const id = positionals[1];
  if (id === undefined || positionals.length > 2) throw new UsageError(`${command} takes one claim id or claimRef`);
  return id;
}

async function run(argv: string[]): Promise<unknown> {
  const { values: flags, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const command = positionals[0];
  if (flags.help === true) return HELP;
  if (command === undefined) throw new UsageError(USAGE);
  switch (command) {
    case 'claim':
      return clientOf(flags).claim(claimRequest(flags));
    case 'get':
      return clientOf(flags).get(one(positionals, command));
    case 'renew':
      return clientOf(flags).renew(one(positionals, command), positiveInt('ttl', flags.ttl));
    case 'release': {
      const id = one(positionals, command);
      await clientOf(flags).release(id, { ignoreNotFound: false });
      return { released: id };
    }
    case 'list': {
      const kube = readKubeContext(flags.kubeconfig ?? defaultKubeconfigPath(), flags.context);
      return { sandboxes: await listSandboxes(kube, namespaceOf(flags)) };
    }
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

async function main(): Promise<void> {
  try {
    const answer = await run(process.argv.slice(2));
    process.stdout.write(answer === HELP ? USAGE : `${JSON.stringify(answer, null, 2)}\n`);
    process.exitCode = EXIT.ok;
  } catch (error) {
    const { code, report } = failure(error);
    process.stderr.write(`${JSON.stringify(report)}\n`);
    process.exitCode = code;
  }
}

await main();
