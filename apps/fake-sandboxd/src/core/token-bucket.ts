// Paces refill boots: at most `ratePerSecond` starts per second on average,
// with short bursts of up to `burst` so a claim's refill can start at once.

export class TokenBucket {
  private tokens: number;
  private updatedAt: number;
  private readonly ratePerMs: number;
  private readonly burst: number;

  constructor(ratePerSecond: number, burst: number, now: number) {
    this.ratePerMs = ratePerSecond / 1000;
    this.burst = burst;
    this.tokens = burst;
    this.updatedAt = now;
  }

  /** Whole tokens available now. */
  available(now: number): number {
    this.refill(now);
    return Math.floor(this.tokens);
  }

  take(count: number, now: number): void {
    this.refill(now);
    this.tokens -= count;
  }

  /** How long until one whole token is available (0 if one is). */
  msUntilNext(now: number): number {
    this.refill(now);
    if (this.tokens >= 1) return 0;
    if (this.ratePerMs <= 0) return Number.POSITIVE_INFINITY;
    return Math.ceil((1 - this.tokens) / this.ratePerMs);
  }

  private refill(now: number): void {
    if (now > this.updatedAt) {
      this.tokens = Math.min(this.burst, this.tokens + (now - this.updatedAt) * this.ratePerMs);
      this.updatedAt = now;
    }
  }
}
