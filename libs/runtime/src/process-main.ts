// How every app's process starts, in one place: flags parsed (flag, then
// env, then default), `--help` and `--version` answered before anything else
// happens, the structured logger the flags ask for, and every failure
// classified by runMain (a bad setting exits 2 with its reason on stderr,
// anything else is logged and exits 1). What is the app's own — its settings'
// validation, what it opens, its graceful-shutdown deadline — stays in its
// `main`.
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';
import { helpText, parseConfig, type ConfigOf, type FlagsSpec } from './config.js';
import { createLogger, parseLogFormat, parseLogLevelFlag, type Logger } from './logger.js';
import { runMain, type RunMainOptions } from './run-main.js';
import { packageVersion, versionLine } from './version.js';

export interface ProcessSpec<S extends FlagsSpec> {
  /** The program: named in --help, --version, every log line (`component`) and a bad setting's message. */
  name: string;
  /** --help's first line. */
  summary: string;
  /** Its flags; `logLevel` and `logFormat` (LOGGING_FLAGS), when among them, set the logger's. */
  flags: S;
  /** The app's process module (`import.meta.url`): the package.json above its folder gives the version. */
  moduleUrl: string;
  /** Further error classes that mean a bad setting (exit 2), beside ConfigError. */
  usageErrors?: RunMainOptions['usageErrors'];
}

/**
 * The two logging flags every app takes, read by processContext into its logger: spread them into an app's FLAGS, so
 * their names, environment variables, defaults and help are the same everywhere.
 */
export const LOGGING_FLAGS = {
  logLevel: { kind: 'string', description: 'debug | info | warn | error', env: 'LOG_LEVEL', default: 'info' },
  logFormat: {
    kind: 'string',
    description: 'json (one object per line) | text (one readable line, stacks below)',
    env: 'LOG_FORMAT',
    default: 'json',
  },
} satisfies FlagsSpec;

/** What a process's `main` starts from. */
export interface ProcessContext<S extends FlagsSpec> {
  config: ConfigOf<S>;
  version: string;
  logger: Logger;
}

export interface ProcessInputs {
  argv?: readonly string[];
  env?: NodeJS.ProcessEnv;
  /** Where --help and --version go (stdout by default). */
  out?: (text: string) => void;
  /** Where log lines go (stderr by default). */
  log?: (line: string) => void;
}

/**
 * The context a process starts from, or undefined when `--help` or `--version` was answered (the process then has
 * nothing left to do). Throws ConfigError on a bad flag, a bad `--log-format` included.
 */
export function processContext<S extends FlagsSpec>(
  spec: ProcessSpec<S>,
  inputs: ProcessInputs = {},
): ProcessContext<S> | undefined {
  const { config, help, version: printVersion } = parseConfig(spec.flags, inputs.argv, inputs.env);
  const out = inputs.out ?? ((text: string) => process.stdout.write(text));
  const version = packageVersion(spec.moduleUrl);
  if (help) {
    out(helpText(spec.name, spec.summary, spec.flags));
    return undefined;
  }
  if (printVersion) {
    out(versionLine(spec.name, version));
    return undefined;
  }
  const logging = config as Record<string, unknown>;
  const logger = createLogger(spec.name, {
    level: parseLogLevelFlag(stringOrUndefined(logging['logLevel'])),
    format: parseLogFormat(stringOrUndefined(logging['logFormat'])),
    ...(inputs.log !== undefined ? { write: inputs.log } : {}),
  });
  return { config, version, logger };
}

function stringOrUndefined(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** Runs an app's process: its `main` gets the context, unless --help or --version was all there was to do. */
export function runProcess<S extends FlagsSpec>(
  spec: ProcessSpec<S>,
  main: (context: ProcessContext<S>) => Promise<void>,
): void {
  runMain(
    spec.name,
    async () => {
      const context = processContext(spec);
      if (context !== undefined) await main(context);
    },
    spec.usageErrors !== undefined ? { usageErrors: spec.usageErrors } : {},
  );
}

/**
 * A process's metrics registry: Node's process_* / nodejs_* metrics under their standard names (so stock dashboards
 * work) and `warmpool_build_info`, which says which build runs.
 */
export function processRegistry(component: string, version: string): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  new Gauge({
    name: 'warmpool_build_info',
    help: 'Always 1; the labels say which build runs',
    labelNames: ['component', 'version', 'node_version'],
    registers: [registry],
  }).set({ component, version, node_version: process.version }, 1);
  return registry;
}
