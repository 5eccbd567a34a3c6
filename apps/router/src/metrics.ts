// The router's Prometheus metrics: every answer by operation and status, the
// time to answer, and why requests were refused (each refusal reason is a
// label value from libs/api, a closed set).
import { Counter, Histogram, type Registry } from 'prom-client';
import type { RuntimeErrorReason } from '@warmpool/api';

export class RouterMetrics {
  readonly #requests: Counter<'operation' | 'code'>;
  readonly #duration: Histogram<'operation'>;
  readonly #refusals: Counter<'reason'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.#requests = new Counter({
      name: 'warmpool_router_requests_total',
      help: 'Requests answered, by operation (execute, upload, download, list, exists; none for other paths) and HTTP status',
      labelNames: ['operation', 'code'],
      registers,
    });
    this.#duration = new Histogram({
      name: 'warmpool_router_request_duration_seconds',
      help: "Time from a request's arrival to its answer's head, by operation",
      labelNames: ['operation'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.#refusals = new Counter({
      name: 'warmpool_router_refusals_total',
      help: 'Requests the router answered itself without reaching the sandbox, by reason',
      labelNames: ['reason'],
      registers,
    });
  }

  answered(operation: string, status: number, startedMs: number): void {
    this.#requests.inc({ operation, code: String(status) });
    this.#duration.observe({ operation }, (performance.now() - startedMs) / 1000);
  }

  refused(reason: RuntimeErrorReason): void {
    this.#refusals.inc({ reason });
  }
}
