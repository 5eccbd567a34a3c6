// Bytes allocated per claim by a serving process, sampled over its inspector
// while the bench drives it: one tally per path, so two paths driven in the
// same run (the control plane and the bare design) compare side by side.
import { freePort } from '@warmpool/harness';
import { AllocationSampler, addAllocations, inspectFlag, topSites, type Allocations } from './allocation-sampler.ts';

/** A process's allocations over the turns sampled, and the claims those turns served. */
export class PathAllocations {
  readonly port: number;
  readonly #total: Allocations = { bytes: 0, bySite: new Map(), byOwnFrame: new Map() };
  #sampler: AllocationSampler | undefined;
  #claims = 0;

  private constructor(port: number) {
    this.port = port;
  }

  /** A tally whose process is to be started with `nodeFlag`. */
  static async reserve(): Promise<PathAllocations> {
    return new PathAllocations(await freePort());
  }

  get nodeFlag(): string {
    return inspectFlag(this.port);
  }

  /** Runs `turn` with the sampler on; its claims count against what was allocated meanwhile. */
  async sample<T extends { claims: number }>(turn: () => Promise<T>): Promise<T> {
    this.#sampler ??= await AllocationSampler.connect(this.port);
    let result: T | undefined;
    const allocations = await this.#sampler.sample(async () => {
      result = await turn();
    });
    addAllocations(this.#total, allocations);
    this.#claims += (result as T).claims;
    return result as T;
  }

  /** KiB allocated per claim over every sampled turn. */
  perClaimKiB(): number {
    return this.#total.bytes / Math.max(1, this.#claims) / 1_024;
  }

  topSites(count: number, by: 'bySite' | 'byOwnFrame' = 'bySite'): string[] {
    return topSites(this.#total, Math.max(1, this.#claims), count, by);
  }

  close(): void {
    this.#sampler?.close();
  }
}
