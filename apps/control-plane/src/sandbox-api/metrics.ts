// The Sandbox API's metrics, prefixed `warmpool_controlplane_` like the rest.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

const PREFIX = 'warmpool_controlplane_';

export class SandboxApiMetrics {
  readonly #requests: Counter;
  readonly #duration: Histogram;
  readonly #watches: Gauge;

  constructor(registry: Registry, served: () => number) {
    const registers = [registry];
    this.#requests = new Counter({
      name: `${PREFIX}sandbox_api_requests_total`,
      help: 'Sandbox API requests by verb and HTTP code (watches counted when they end)',
      labelNames: ['verb', 'code'],
      registers,
    });
    this.#duration = new Histogram({
      name: `${PREFIX}sandbox_api_request_duration_seconds`,
      help: 'Sandbox API request duration (authorization included), watches excluded',
      labelNames: ['verb'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers,
    });
    this.#watches = new Gauge({ name: `${PREFIX}sandbox_api_watches`, help: 'Open Sandbox watches', registers });
    new Gauge({
      name: `${PREFIX}sandboxes_served`,
      help: "Sandboxes in this replica's view",
      registers,
      collect() {
        this.set(served());
      },
    });
  }

  request(verb: string, code: number, seconds: number): void {
    this.#requests.inc({ verb, code: String(code) });
    this.#duration.observe({ verb }, seconds);
  }

  watchStarted(): void {
    this.#watches.inc();
  }

  watchEnded(): void {
    this.#watches.dec();
    this.#requests.inc({ verb: 'watch', code: '200' });
  }
}
