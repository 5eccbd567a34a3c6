// A frozen apiserver (SIGSTOP: its sockets stay open, nothing answers) must
// not hold a plain request, nor an access review every caller of a token waits
// on, for the minutes TCP keepalive takes to notice; a watch is not cut by the
// plain requests' deadline.
import { startCluster, type TestCluster } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KubeAccessReviewer, KubeTransport, ReviewUnavailable } from '../src/index.js';

const IDLE_MS = 500;

describe('a frozen apiserver', () => {
  let cluster: TestCluster;
  let transport: KubeTransport;
  let frozen = false;

  const freeze = (): void => {
    process.kill(cluster.pids().apiserver ?? 0, 'SIGSTOP');
    frozen = true;
  };
  const thaw = (): void => {
    if (frozen) process.kill(cluster.pids().apiserver ?? 0, 'SIGCONT');
    frozen = false;
  };
  const namespaceOf = (name: string): Promise<unknown> =>
    transport.request({ method: 'GET', path: `/api/v1/namespaces/${name}` });

  beforeAll(async () => {
    cluster = await startCluster({ name: 'kube-frozen' });
    transport = new KubeTransport(cluster.kubeConfig, { requestIdleTimeoutMs: IDLE_MS });
  });

  afterEach(thaw);

  afterAll(async () => {
    thaw();
    transport?.close();
    await cluster?.stop();
  });

  it('fails a plain request on a kept-alive connection after the idle timeout, and the next one succeeds', async () => {
    await namespaceOf('default'); // a kept-alive connection to reuse
    freeze();
    const started = performance.now();
    await expect(namespaceOf('default')).rejects.toThrow(`no data from the apiserver for ${IDLE_MS} ms`);
    expect(performance.now() - started).toBeLessThan(10_000);
    thaw();
    await expect(namespaceOf('default')).resolves.toMatchObject({ metadata: { name: 'default' } });
  });

  it('fails a request that opens a new connection (the TLS handshake stalls) after the idle timeout', async () => {
    transport.close(); // no kept-alive connection left
    freeze();
    await expect(namespaceOf('kube-system')).rejects.toThrow(`no data from the apiserver for ${IDLE_MS} ms`);
  });

  it('answers an access review ReviewUnavailable, and asks again once the apiserver is back', async () => {
    const reviewer = new KubeAccessReviewer({ transport, reviewTimeoutMs: IDLE_MS });
    await reviewer.authenticate('not-a-token'); // warm the connection
    freeze();
    const stuck = reviewer.authenticate('another-token');
    const sharing = reviewer.authenticate('another-token'); // waits on the same review in flight
    await expect(stuck).rejects.toBeInstanceOf(ReviewUnavailable);
    await expect(sharing).rejects.toBeInstanceOf(ReviewUnavailable);
    thaw();
    await expect(reviewer.authenticate('another-token')).resolves.toBeUndefined();
  });

  it('keeps a quiet watch open past the plain requests’ idle timeout', async () => {
    const controller = new AbortController();
    const lines: unknown[] = [];
    const watching = (async () => {
      for await (const line of transport.streamLines({
        method: 'GET',
        path: '/api/v1/namespaces/default/configmaps',
        query: { watch: true, fieldSelector: 'metadata.name=nobody-here' },
        signal: controller.signal,
      }))
        lines.push(line);
    })();
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS * 3));
    controller.abort();
    await expect(watching).resolves.toBeUndefined();
    expect(lines).toEqual([]);
  });
});
