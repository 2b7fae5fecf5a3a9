// Retries one artifact metadata call through transient failures and classifies the rest: fenced
// (another attempt owns the job now), cancelled, or a named failure the attempt reports.
import { describeFailure, isRetriable, type ApiResult } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import { backoffMs, sleep } from "../timing.ts";

export type CallFailure =
  | { kind: "fenced"; code: string }
  | { kind: "cancelled" }
  | { kind: "aborted" }
  | { kind: "error"; code: string; status: number | null; message: string };

export type CallResult<T> = { ok: true; data: T } | { ok: false; failure: CallFailure };

const FENCED = new Set(["ATTEMPT.STALE_EPOCH", "ATTEMPT.LEASE_EXPIRED"]);

export async function callControl<T>(
  what: string,
  call: (signal: AbortSignal) => Promise<ApiResult<T>>,
  opts: { signal: AbortSignal; log: Logger; attempts?: number },
): Promise<CallResult<T>> {
  const attempts = opts.attempts ?? 6;
  for (let i = 0; ; i++) {
    if (opts.signal.aborted) return { ok: false, failure: { kind: "aborted" } };
    const res = await call(opts.signal);
    if (res.ok) return { ok: true, data: res.data };
    if (opts.signal.aborted) return { ok: false, failure: { kind: "aborted" } };
    if (res.kind === "http" && res.status === 409 && FENCED.has(res.code))
      return { ok: false, failure: { kind: "fenced", code: res.code } };
    if (res.kind === "http" && res.code === "RUN.CANCELLED") return { ok: false, failure: { kind: "cancelled" } };
    if (!isRetriable(res) || i + 1 >= attempts) {
      return {
        ok: false,
        failure: {
          kind: "error",
          code: res.kind === "http" ? res.code : res.kind,
          status: res.kind === "network" ? null : res.status,
          message: describeFailure(res),
        },
      };
    }
    const delay = backoffMs(i, 500, 10_000);
    opts.log.warn(`${what} failed; retrying`, { error: describeFailure(res), retry_in_ms: delay });
    await sleep(delay, opts.signal);
  }
}
