// Where a pool patch's time goes before the control plane hands out its round,
// without polling the control plane: the benchmark's own watch on the pool
// times the apiserver's part (patch request → watch event), and the control
// plane's pool_change_answer histogram, read before and after the patch, times
// its part (its informer's event → the run that answers it starts, hands out
// its round, ends).
import type { SandboxWarmPool } from '@warmpool/api';
import type { ResourceClient } from '@warmpool/kube';
import { sum, type Sample } from './prom-text.ts';

/** Follows one pool's spec.replicas through a watch of its own; every event stamped with performance.now(). */
export class PoolWatch {
  readonly #controller = new AbortController();
  #waiting: { replicas: number; resolve: (at: number | undefined) => void } | undefined;

  constructor(client: ResourceClient<SandboxWarmPool>, namespace: string, name: string) {
    void this.#follow(client, namespace, name);
  }

  async #follow(client: ResourceClient<SandboxWarmPool>, namespace: string, name: string): Promise<void> {
    const { signal } = this.#controller;
    while (!signal.aborted) {
      try {
        const events = client.watch({ namespace, fieldSelector: `metadata.name=${name}`, signal });
        for await (const event of events) {
          const at = performance.now();
          const waiting = this.#waiting;
          if (waiting !== undefined && event.object.spec?.replicas === waiting.replicas) {
            this.#waiting = undefined;
            waiting.resolve(at);
          }
        }
      } catch {
        // An ended or refused watch is opened again (a missed event leaves that patch unmeasured, never misdated).
      }
    }
  }

  /** Call right before the patch: resolves with when the watch delivered spec.replicas = `replicas`. */
  next(replicas: number, timeoutMs: number): Promise<number | undefined> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#waiting = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.#waiting = {
        replicas,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
      };
    });
  }

  close(): void {
    this.#controller.abort();
  }
}

export const ANSWER_STAGES = ['run_start', 'handed_out', 'run_end'] as const;
export type AnswerStage = (typeof ANSWER_STAGES)[number];

/**
 * The control plane's own times from its pool informer's event to each stage of the run that answered it, between
 * two scrapes: defined only when exactly one pool change was answered in between (one patch, one run).
 */
export function answerBetween(
  before: readonly Sample[],
  after: readonly Sample[],
): Partial<Record<AnswerStage, number>> {
  const name = 'warmpool_controlplane_pool_change_answer_seconds';
  const times: Partial<Record<AnswerStage, number>> = {};
  for (const stage of ANSWER_STAGES) {
    const count = sum(after, `${name}_count`, { stage }) - sum(before, `${name}_count`, { stage });
    if (count !== 1) continue;
    times[stage] = (sum(after, `${name}_sum`, { stage }) - sum(before, `${name}_sum`, { stage })) * 1000;
  }
  return times;
}

/** What the apiserver says of one patch of a pool, and what else it served meanwhile, between two scrapes. */
export interface ApiserverSide {
  /** Its own time for the PATCH of sandboxwarmpools (from the request's arrival to its answer). */
  patchMs: number | undefined;
  /** Requests it served in between, by verb: writes and reads. */
  writes: number;
  reads: number;
}

export function apiserverBetween(before: readonly Sample[], after: readonly Sample[]): ApiserverSide {
  const delta = (name: string, where: Record<string, string> = {}): number =>
    sum(after, name, where) - sum(before, name, where);
  const patch = { verb: 'PATCH', resource: 'sandboxwarmpools', subresource: '' };
  const patchCount = delta('apiserver_request_duration_seconds_count', patch);
  let writes = 0;
  let reads = 0;
  for (const s of after) {
    if (s.name !== 'apiserver_request_total') continue;
    const prior = before.find((b) => b.name === s.name && sameLabels(b.labels, s.labels))?.value ?? 0;
    const verb = s.labels.get('verb') ?? '';
    if (['POST', 'PUT', 'PATCH', 'DELETE', 'APPLY'].includes(verb)) writes += s.value - prior;
    else if (verb !== 'WATCH') reads += s.value - prior;
  }
  return {
    patchMs: patchCount === 1 ? delta('apiserver_request_duration_seconds_sum', patch) * 1000 : undefined,
    writes,
    reads,
  };
}

function sameLabels(a: ReadonlyMap<string, string>, b: ReadonlyMap<string, string>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}
