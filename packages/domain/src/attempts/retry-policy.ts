// Bounded exponential backoff with full jitter for platform-failure retries (seed 000 section 8).
// The random draw is passed in: the domain reads no random source.
export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 60_000 };

/** Delay before retry number `retry` (1 = first retry). `unit` is a uniform draw in [0, 1). */
export function backoffDelayMs(retry: number, unit: number, policy: BackoffPolicy = DEFAULT_BACKOFF): number {
  const exp = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, retry - 1));
  // Half fixed, half jittered: never zero (a hot loop on a broken host), never above the cap.
  const u = Math.min(Math.max(unit, 0), 0.999999);
  return Math.round(exp / 2 + (exp / 2) * u);
}

/** Whether a job whose attempt just ended with a platform failure gets another attempt. */
export function shouldRetryPlatformFailure(retriesUsed: number, budget: number): boolean {
  return retriesUsed < budget;
}
