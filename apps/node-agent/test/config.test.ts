import { parseConfig, parseHostPort } from '@warmpool/runtime';
import { advertiseAddressOf, FLAGS, validateConfig } from '@warmpool/node-agent';
import { describe, expect, it } from 'vitest';

function configOf(args: string[], env: NodeJS.ProcessEnv = {}): ReturnType<typeof parseConfig<typeof FLAGS>>['config'] {
  return parseConfig(FLAGS, args, env).config;
}

describe('node agent configuration', () => {
  it('has defaults for everything but the node name, token and addresses', () => {
    const config = configOf(['--node-name', 'n1']);
    expect(config).toMatchObject({
      listen: '0.0.0.0:7071',
      sandboxdUrl: 'http://127.0.0.1:7777',
      publishInterval: 30_000,
      minPublishGap: 5_000,
      pollInterval: 1_000,
      sandboxdTimeout: 10_000,
      noInventory: false,
      logLevel: 'info',
    });
    expect(config.tokenFile).toBeUndefined();
  });

  it('reads the node name and sandboxd URL from the environment', () => {
    const config = configOf([], { NODE_NAME: 'node-7', SANDBOXD_URL: 'unix:/run/sandboxd.sock' });
    expect(config.nodeName).toBe('node-7');
    expect(() => validateConfig(config)).not.toThrow();
  });

  it('requires a node name unless the inventory is off', () => {
    expect(() => validateConfig(configOf([]))).toThrow(/--node-name \(or NODE_NAME\) is required/);
    expect(() => validateConfig(configOf(['--no-inventory']))).not.toThrow();
  });

  it.each([
    [['--sandboxd-url', 'https://x:1'], /^--sandboxd-url: .*only http:\/\/ and unix: are supported/],
    [['--sandboxd-url', 'unix:'], /^--sandboxd-url: .*want unix:\/path/],
    [['--listen', 'nowhere'], /^--listen: .*want HOST:PORT/],
    [['--poll-interval', '0s'], /--poll-interval must be positive/],
    [['--capacity=-3'], /--capacity must be a non-negative integer/],
  ])('refuses %j', (args, message) => {
    expect(() => validateConfig(configOf(['--no-inventory', ...args]))).toThrow(message);
  });

  it('advertises the flag, else POD_IP with the listen port, else a specific listen host', () => {
    const listen = parseHostPort('0.0.0.0:7071');
    expect(advertiseAddressOf(configOf(['--advertise-address', '10.0.0.9:80']), listen, { POD_IP: '10.1.1.1' })).toBe(
      '10.0.0.9:80',
    );
    expect(advertiseAddressOf(configOf([]), listen, { POD_IP: '10.1.1.1' })).toBe('10.1.1.1:7071');
    expect(advertiseAddressOf(configOf([]), listen, { POD_IP: 'fd00::5' })).toBe('[fd00::5]:7071');
    expect(advertiseAddressOf(configOf([]), parseHostPort('10.2.2.2:9000'), {})).toBe('10.2.2.2:9000');
    expect(() => advertiseAddressOf(configOf([]), listen, {})).toThrow(/cannot tell the advertise address/);
  });
});
