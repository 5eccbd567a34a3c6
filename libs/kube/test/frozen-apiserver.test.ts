// A frozen apiserver (SIGSTOP: its sockets stay open, nothing answers) must
// not hold a plain request, nor an access review every caller of a token waits
// on, for the minutes TCP keepalive takes to notice; a watch is not cut by the
// plain requests' deadline.
import { eventually, Freezer, startCluster, type TestCluster } from '@warmpool/harness';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  configureTransport,
  KubeAccessReviewer,
  KubeTransport,
  loadKubeConfig,
  ReviewUnavailable,
  transportFor,
} from '../src/index.js';

const IDLE_MS = 500;
/** What a request to the running apiserver may take on a loaded CI machine. */
const HEALTHY_MS = 30_000;

describe('a frozen apiserver', () => {
  let cluster: TestCluster;
  let transport: KubeTransport;

  const apiserverPid = (): number => {
    const pid = cluster.pids().apiserver;
    if (pid === undefined) throw new Error('the apiserver is not running');
    return pid;
  };
  const frozen = new Freezer(apiserverPid);
  const freeze = (): Promise<void> => frozen.freeze();
  const thaw = (): void => frozen.thaw();
  /** GET a namespace; `idleTimeoutMs` undefined: the transport's default (the frozen cases' IDLE_MS). */
  const namespaceOf = (name: string, idleTimeoutMs?: number, via = transport): Promise<unknown> =>
    via.request({ method: 'GET', path: `/api/v1/namespaces/${name}`, idleTimeoutMs });

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
    await namespaceOf('default', HEALTHY_MS); // a kept-alive connection to reuse
    await freeze();
    const started = performance.now();
    await expect(namespaceOf('default')).rejects.toThrow(`no data from the apiserver for ${IDLE_MS} ms`);
    expect(performance.now() - started).toBeLessThan(10_000);
    thaw();
    await expect(namespaceOf('default', HEALTHY_MS)).resolves.toMatchObject({ metadata: { name: 'default' } });
  });

  it("hands a KubeConfig's clients the timeout it was loaded with (the apps' --kube-request-timeout)", async () => {
    const kubeConfig = loadKubeConfig(cluster.kubeconfigPath, { requestIdleTimeoutMs: IDLE_MS });
    const shared = transportFor(kubeConfig);
    try {
      await namespaceOf('default', HEALTHY_MS, shared);
      await freeze();
      await expect(namespaceOf('default', undefined, shared)).rejects.toThrow(
        `no data from the apiserver for ${IDLE_MS} ms`,
      );
      // Its clients hold that transport already: it can no longer be configured otherwise.
      expect(() => configureTransport(kubeConfig, {})).toThrow('configure it before any client is made');
    } finally {
      shared.close();
    }
  });

  it('fails a request that opens a new connection (the TLS handshake stalls) after the idle timeout', async () => {
    transport.close(); // no kept-alive connection left
    await freeze();
    await expect(namespaceOf('kube-system')).rejects.toThrow(`no data from the apiserver for ${IDLE_MS} ms`);
  });

  it('answers a call waiting on a review ReviewUnavailable after the wait, while the review goes on', async () => {
    // The review's own request may wait a minute: the call's wait, not the transport's, must answer the caller.
    const patient = new KubeTransport(cluster.kubeConfig, { requestIdleTimeoutMs: 60_000 });
    const reviewer = new KubeAccessReviewer({ transport: patient, reviewWaitMs: IDLE_MS });
    try {
      await namespaceOf('default', HEALTHY_MS, patient); // a kept-alive connection for the review
      await freeze();
      const started = performance.now();
      const stuck = reviewer.authenticate('another-token');
      const sharing = reviewer.authenticate('another-token'); // waits on the same review in flight
      await expect(stuck).rejects.toThrow(
        new ReviewUnavailable(`the apiserver has not answered the review within ${IDLE_MS} ms`),
      );
      await expect(sharing).rejects.toBeInstanceOf(ReviewUnavailable);
      expect(performance.now() - started).toBeLessThan(5_000);
      thaw();
      // The review in flight is answered once the apiserver runs again (a token it does not know: not
      // authenticated), and its answer is what the next calls get.
      await eventually(
        () =>
          reviewer.authenticate('another-token').then(
            (user) => user === undefined,
            () => false,
          ),
        {
          timeoutMs: HEALTHY_MS,
          what: 'the review answered after the thaw',
        },
      );
    } finally {
      patient.close();
    }
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
