// The Sentinel topology: a primary, a replica and three Sentinels on
// loopback that fail over when the primary is killed, and leave nothing
// behind when closed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isAlive,
  processGroupMembers,
  respCommand,
  RespError,
  startSentinelTopology,
  type TestSentinelTopology,
} from '../src/index.js';

describe('startSentinelTopology', () => {
  let topology: TestSentinelTopology;

  beforeAll(async () => {
    topology = await startSentinelTopology({ password: 'pw', sentinelPassword: 'spw' });
  });
  afterAll(() => topology?.close());

  it('runs a primary and a replica behind three Sentinels on loopback, all with passwords, nothing persisted', async () => {
    expect(topology.sentinels).toHaveLength(3);
    expect(topology.nodes).toHaveLength(2);
    const [primary] = topology.nodes;
    expect(await topology.primaryAddress()).toEqual({ host: '127.0.0.1', port: primary?.port });
    expect(await respCommand({ host: '127.0.0.1', port: primary?.port ?? 0 }, ['PING'])).toBeInstanceOf(RespError);
    const [sentinelAddress] = topology.sentinelAddresses;
    const sentinel = { host: '127.0.0.1', port: sentinelAddress?.port ?? 0 };
    expect(await respCommand(sentinel, ['PING'])).toBeInstanceOf(RespError);
    expect(await respCommand({ ...sentinel, password: 'spw' }, ['PING'])).toBe('PONG');
    expect(await respCommand(primary?.target ?? sentinel, ['CONFIG', 'GET', 'appendonly'])).toEqual([
      'appendonly',
      'no',
    ]);
  });

  it('promotes the replica when the primary is killed', async () => {
    const [first, second] = topology.nodes;
    const killed = await topology.killPrimary();
    expect(killed.port).toBe(first?.port);
    expect(await topology.waitForFailover()).toEqual({ host: '127.0.0.1', port: second?.port });
    // Longer than waitForFailover's own wait, so a failure says what the Sentinels did.
  }, 90_000);

  it('stops every process and removes every temp dir at close', async () => {
    const { pids } = topology;
    expect(pids).toHaveLength(5);
    await topology.close();
    for (const pid of pids) {
      expect(isAlive(pid)).toBe(false);
      expect(processGroupMembers(pid)).toEqual([]);
    }
  });
});
