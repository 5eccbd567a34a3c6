import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, processGroupMembers, redisPing, startRedis, type TestRedis } from '../src/index.js';

/** One inline command over RESP, answer's first line. */
function command(redis: TestRedis, line: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: redis.host, port: redis.port });
    let answer = '';
    socket.on('error', reject);
    socket.on('connect', () => socket.write(`${line}\r\n`));
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('utf8');
      if (answer.includes('\r\n')) {
        socket.destroy();
        resolve(answer.split('\r\n')[0] ?? '');
      }
    });
  });
}

describe('startRedis', () => {
  let redis: TestRedis;

  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(() => redis?.stop());

  it('answers PING on a loopback port', async () => {
    expect(redis.host).toBe('127.0.0.1');
    expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`);
    await expect(redisPing(redis.host, redis.port)).resolves.toBe(true);
  });

  it('runs without persistence', async () => {
    expect(await command(redis, 'CONFIG GET save')).toBe('*2');
    expect(await command(redis, 'SET k v')).toBe('+OK');
    expect(await command(redis, 'GET k')).toBe('$1');
  });

  it('stops without leaving a process behind', async () => {
    const pid = redis.pid;
    await redis.stop();
    expect(isAlive(pid)).toBe(false);
    expect(processGroupMembers(pid)).toEqual([]);
    await expect(redisPing(redis.host, redis.port)).resolves.toBe(false);
  });
});

describe('startRedis without redis-server installed', () => {
  it('names the make target that installs it', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    try {
      await expect(startRedis()).rejects.toThrow('make redis');
    } finally {
      process.env.PATH = path;
    }
  });
});
