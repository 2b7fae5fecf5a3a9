// Secrets for one attempt (issue 16, docs/adr/0025): asked of the broker once, with the job token,
// before the first step. An untrusted run gets none and the job's log says why; with
// secrets_required the job ends blocked_by_policy instead of running without them. Values live in
// this process's memory for the attempt only: never on disk, never in the agent's own log.
import { SECRET_NOT_SET } from "@kiln/domain";
import { callControl, type CallFailure } from "../artifacts/index.ts";
import type { ControlClient, JobTicket } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import type { Verdict } from "../shared/verdict.ts";
import { monotonicNow, wireMs } from "../timing.ts";

export interface JobSecrets {
  /** Step environment entries, under each secret's own name. */
  env: Record<string, string>;
  values: string[];
}

export type SecretsResult =
  | { kind: "ready"; secrets: JobSecrets }
  | { kind: "blocked"; verdict: Verdict }
  | { kind: "failed"; failure: CallFailure };

export const NO_SECRETS: JobSecrets = { env: {}, values: [] };

export async function fetchJobSecrets(deps: {
  client: ControlClient;
  ticket: JobTicket;
  log: Logger;
  signal: AbortSignal;
  /** One line into the job's own log. */
  writeLogLine: (line: string) => void;
}): Promise<SecretsResult> {
  const { client, ticket, log, signal } = deps;
  const declared = ticket.job.secrets ?? [];
  if (declared.length === 0) return { kind: "ready", secrets: NO_SECRETS };
  const started = monotonicNow();
  const res = await callControl(
    "fetch secrets",
    (s) => client.fetchSecrets(ticket.jobId, ticket.jobToken, ticket.epoch, { timeoutMs: 15_000, signal: s }),
    { signal, log, attempts: 4 },
  );
  // The broker's answer time at job start (bench/secrets reads it from this agent's log).
  const brokerMs = wireMs(monotonicNow() - started);
  if (!res.ok) return { kind: "failed", failure: res.failure };
  const { delivered, withheld, missing, required } = res.data;
  if (withheld) {
    deps.writeLogLine(`[kiln] ${withheld.cause}: ${withheld.message}`);
    log.info("secrets withheld", { cause: withheld.cause, required, broker_ms: brokerMs });
    if (required)
      return {
        kind: "blocked",
        verdict: { outcome: "blocked_by_policy", cause: withheld.cause, message: withheld.message, exitCode: null },
      };
    return { kind: "ready", secrets: NO_SECRETS };
  }
  if (missing.length > 0) {
    const message = `secrets not set: ${missing.join(", ")}`;
    deps.writeLogLine(`[kiln] ${SECRET_NOT_SET}: ${message}${required ? "" : " (the steps run without them)"}`);
    if (required)
      return {
        kind: "blocked",
        verdict: { outcome: "blocked_by_policy", cause: SECRET_NOT_SET, message, exitCode: null },
      };
  }
  // Only what the job declared, even if a broker answered more (defence in depth against a bad peer).
  const allowed = new Set(declared);
  const env: Record<string, string> = {};
  for (const s of delivered) if (allowed.has(s.name)) env[s.name] = s.value;
  log.info("secrets delivered", {
    names: Object.keys(env),
    versions: delivered.map((s) => s.version),
    broker_ms: brokerMs,
  });
  return { kind: "ready", secrets: { env, values: Object.values(env) } };
}
