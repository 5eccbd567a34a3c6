// What the claims bench counts of the HTTP claim API over one level's rounds,
// beside the claims themselves: the control plane's batches, stages and GC
// pauses (its /metrics page), the apiserver's writes, the control plane's and
// redis-server's CPU, Redis's commands and what the kernel counted. Each round
// is read before and after its turn and the difference added; the readings
// nest around the turn (metrics page, apiserver, CPU, Redis commands, kernel,
// then the same backwards), so reading the metrics page and the apiserver
// costs the CPU figures nothing.
//
// The control plane's CPU is read twice a round: `cpu` (/proc ticks, the
// "CPU per HTTP claim" row) around the Redis readings too, `kernel` (the
// kernel's count row) around the turn alone. The two rows measure those
// windows; keep them apart.
import type { RespTarget, TlsClientAuth } from '@warmpool/harness';
import { CLAIM_RESOURCES, claimKindWrites, scrapeWrites } from './apiserver-metrics.ts';
import {
  addGc,
  addTallies,
  batchStats,
  controlPlaneGc,
  stageStats,
  type GcTally,
  type Tally,
} from './claim-path-metrics.ts';
import { countedBy, emptyKernel } from './kernel-tally.ts';
import { cpuMsOf } from './proc.ts';
import { RedisTally } from './redis-commandstats.ts';

export interface ClaimRoundMeterOptions {
  controlPlane: { readonly pid: number; metrics(): Promise<string> };
  redis: { readonly pid: number; readonly target: RespTarget };
  apiserver: { server: string; tls: TlsClientAuth };
}

/** One level's tallies of the HTTP claim API, summed over its rounds (`calls.top` and `writes.byResource`: the last's). */
export class ClaimRoundMeter {
  readonly batches: Tally = { count: 0, sum: 0 };
  /** Every stage of STAGES, in its order. */
  readonly stages = stageStats('');
  readonly gc: GcTally = { count: 0, ms: 0, over10ms: 0 };
  /** CPU ms of each process, from /proc ticks. */
  readonly cpu = { controlPlane: 0, redis: 0 };
  readonly kernel = emptyKernel();
  /** Redis commands, and the scripts among them; `top`: the last round's, per claim. */
  readonly calls: RedisTally;
  /** Apiserver writes, and those of claim kinds; `byResource`: the last round's. */
  readonly writes = { total: 0, claimKinds: 0, byResource: '' };
  readonly #options: ClaimRoundMeterOptions;

  constructor(options: ClaimRoundMeterOptions) {
    this.#options = options;
    this.calls = new RedisTally(options.redis.target);
  }

  /** Runs `turn` as a round, adding what it cost to the tallies. */
  async round<T extends { claims: number }>(turn: () => Promise<T>): Promise<T> {
    const { controlPlane, redis, apiserver } = this.#options;
    const pageBefore = await controlPlane.metrics();
    const writesBefore = await scrapeWrites(apiserver.server, apiserver.tls);
    const cpuBefore = { controlPlane: cpuMsOf(controlPlane.pid), redis: cpuMsOf(redis.pid) };
    const result = await this.calls.around(() => countedBy(controlPlane.pid, this.kernel, turn));
    this.cpu.controlPlane += cpuMsOf(controlPlane.pid) - cpuBefore.controlPlane;
    this.cpu.redis += cpuMsOf(redis.pid) - cpuBefore.redis;
    const writesAfter = await scrapeWrites(apiserver.server, apiserver.tls);
    const pageAfter = await controlPlane.metrics();
    addTallies(this.stages, stageStats(pageBefore), stageStats(pageAfter));
    addGc(this.gc, controlPlaneGc(pageBefore), controlPlaneGc(pageAfter));
    const [batchesBefore, batchesAfter] = [batchStats(pageBefore), batchStats(pageAfter)];
    this.batches.count += batchesAfter.count - batchesBefore.count;
    this.batches.sum += batchesAfter.sum - batchesBefore.sum;
    const writes = claimKindWrites(writesBefore, writesAfter, CLAIM_RESOURCES);
    this.writes.total += writes.total;
    this.writes.claimKinds += writes.claimKinds;
    this.writes.byResource = writes.byResource;
    return result;
  }
}
