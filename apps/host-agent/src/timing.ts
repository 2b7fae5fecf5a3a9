// Time helpers. Deadlines (leases, watchdog, phases) use the monotonic clock so that an NTP step or
// a wall-clock jump cannot make a lease look alive or dead.

/** Milliseconds on a monotonic clock; only differences are meaningful. */
export type MonotonicClock = () => number;

export const monotonicNow: MonotonicClock = () => performance.now();

/** Resolves after `ms`, or early (without throwing) when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Exponential backoff with full jitter in [base/2, cap]: 0 -> ~base, 1 -> ~2*base, ... */
export function backoffMs(attempt: number, baseMs = 500, capMs = 30_000): number {
  const ceiling = Math.min(capMs, baseMs * 2 ** Math.min(attempt, 20));
  return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
}

/** Whole, non-negative milliseconds for the wire (the protocol wants ints >= 0). */
export function wireMs(ms: number): number {
  return Math.max(0, Math.round(ms));
}
