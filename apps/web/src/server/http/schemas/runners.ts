import { ISOLATION_CLASSES, QUARANTINE_KINDS, RUNNER_STATES } from "@kiln/domain";
import type { OrgPoolView, RunnerView } from "@kiln/engine";
import { z } from "zod";

// Wire shapes of the runner API (issue 22, docs/adr/0034): strict, so e2e checks live answers.

export const runner = z.object({
  id: z.string(),
  name: z.string(),
  org: z.string().nullable(),
  pool: z.string(),
  labels: z.array(z.string()),
  isolation: z.enum(ISOLATION_CLASSES).nullable(),
  state: z.enum(RUNNER_STATES),
  quarantine: z
    .object({ kind: z.enum(QUARANTINE_KINDS), reason: z.string(), at: z.string(), by: z.string() })
    .nullable(),
  protocol_version: z.number().nullable(),
  agent_version: z.string().nullable(),
  last_heartbeat_at: z.string().nullable(),
  slots: z.object({ in_use: z.number(), total: z.number() }),
  platform_failures_last_hour: z.number(),
  created_at: z.string(),
});

export const runners = z.object({ runners: z.array(runner) });

export const registrationToken = z.object({
  id: z.string(),
  /** Shown once; only its hash is stored. */
  token: z.string(),
  org: z.string(),
  pool: z.string(),
  single_use: z.boolean(),
  expires_at: z.string(),
});

export const orgPool = z.object({
  name: z.string(),
  org: z.string(),
  min_isolation: z.enum(ISOLATION_CLASSES),
  admits_untrusted: z.boolean(),
  created_at: z.string(),
});

export function runnerJson(r: RunnerView): z.infer<typeof runner> {
  return {
    id: r.id,
    name: r.name,
    org: r.org,
    pool: r.pool,
    labels: r.labels,
    isolation: r.isolation,
    state: r.state,
    quarantine: r.quarantine,
    protocol_version: r.protocolVersion,
    agent_version: r.agentVersion,
    last_heartbeat_at: r.lastHeartbeatAt,
    slots: { in_use: r.slots.inUse, total: r.slots.total },
    platform_failures_last_hour: r.platformFailuresLastHour,
    created_at: r.createdAt,
  };
}

export function orgPoolJson(p: OrgPoolView): z.infer<typeof orgPool> {
  return {
    name: p.name,
    org: p.org,
    min_isolation: p.minIsolation,
    admits_untrusted: p.admitsUntrusted,
    created_at: p.createdAt,
  };
}
