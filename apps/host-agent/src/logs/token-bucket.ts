// The per-attempt byte-rate limit on shipping: a token bucket. Output above the rate is not lost,
// it waits in the spool (bounded by the size limit), so the limit costs latency, never bytes.
import { sleep } from "../timing.ts";

export class TokenBucket {
  private tokens: number;
  private at: number;

  constructor(
    private readonly ratePerSec: number,
    private readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.tokens = burst;
    this.at = now();
  }

  /** Waits until `n` bytes may go; a request larger than the burst goes into debt instead of waiting forever. */
  async take(n: number, signal: AbortSignal): Promise<void> {
    this.refill();
    if (this.tokens < Math.min(n, this.burst)) {
      const waitMs = ((Math.min(n, this.burst) - this.tokens) / this.ratePerSec) * 1000;
      await sleep(waitMs, signal);
      this.refill();
    }
    this.tokens -= n;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.at) / 1000) * this.ratePerSec);
    this.at = t;
  }
}
