import { describe, expect, it } from 'vitest';
import {
  ConfigError,
  helpText,
  processContext,
  processRegistry,
  versionLine,
  type FlagsSpec,
  type ProcessSpec,
} from '../src/index.js';

const flags = {
  listen: { kind: 'string', description: 'address to listen on', default: '127.0.0.1:8080' },
  logLevel: { kind: 'string', description: 'debug | info | warn | error', env: 'LOG_LEVEL', default: 'info' },
  logFormat: { kind: 'string', description: 'json | text', env: 'LOG_FORMAT', default: 'json' },
} satisfies FlagsSpec;

// The package.json above this spec's folder is libs/runtime's own.
const spec: ProcessSpec<typeof flags> = {
  name: 'example',
  summary: 'An example process.',
  flags,
  moduleUrl: import.meta.url,
};

/** processContext with what it printed and logged captured. */
function start(argv: string[], env: NodeJS.ProcessEnv = {}, ofSpec: ProcessSpec<FlagsSpec> = spec) {
  const printed: string[] = [];
  const logged: string[] = [];
  const context = processContext(ofSpec, {
    argv,
    env,
    out: (text) => printed.push(text),
    log: (line) => logged.push(line),
  });
  return { context, printed, logged };
}

describe('a process start', () => {
  it('answers --help with the flags and starts nothing', () => {
    const { context, printed } = start(['--help']);
    expect(context).toBeUndefined();
    expect(printed).toEqual([helpText('example', 'An example process.', flags)]);
  });

  it('answers --version with the package version and starts nothing', () => {
    const { context, printed } = start(['--version']);
    expect(context).toBeUndefined();
    expect(printed).toEqual([versionLine('example', '0.1.0')]);
  });

  it('hands main the parsed flags, the version and a JSON logger named after the program', () => {
    const { context, printed, logged } = start(['--listen', '0.0.0.0:9000']);
    expect(printed).toEqual([]);
    expect(context?.config.listen).toBe('0.0.0.0:9000');
    expect(context?.version).toBe('0.1.0');
    context?.logger.info('serving', { address: '0.0.0.0:9000' });
    expect(logged).toHaveLength(1);
    expect(JSON.parse(logged[0] as string)).toMatchObject({
      level: 'info',
      component: 'example',
      msg: 'serving',
      address: '0.0.0.0:9000',
    });
  });

  it('logs at the level and in the format the flags (or their env) ask for', () => {
    const { context, logged } = start(['--log-format', 'text'], { LOG_LEVEL: 'warn' });
    context?.logger.info('hidden');
    context?.logger.warn('shown');
    expect(logged).toHaveLength(1);
    expect(logged[0]).toMatch(/WARN\s+example\s+shown/);
  });

  it('refuses a log format it does not know as a bad setting', () => {
    expect(() => start(['--log-format', 'xml'])).toThrow(ConfigError);
  });

  it('refuses an unknown flag as a bad setting', () => {
    expect(() => start(['--no-such-flag'])).toThrow(ConfigError);
  });

  it('logs JSON at info for a program without log flags', () => {
    const bare: ProcessSpec<FlagsSpec> = { ...spec, flags: { listen: flags.listen } };
    const { context, logged } = start([], {}, bare);
    context?.logger.debug('hidden');
    context?.logger.info('shown');
    expect(logged.map((line) => (JSON.parse(line) as { msg: string }).msg)).toEqual(['shown']);
  });
});

describe('a process registry', () => {
  it("carries Node's default metrics and the build info", async () => {
    const text = await processRegistry('example', '1.2.3').metrics();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain(
      `warmpool_build_info{component="example",version="1.2.3",node_version="${process.version}"} 1`,
    );
  });
});
