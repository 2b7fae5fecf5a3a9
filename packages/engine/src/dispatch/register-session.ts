import type { Db } from "@kiln/db";
import { type agentProtocol, DEFAULT_RUNNER_SIZE, DomainError, isolationAtLeast } from "@kiln/domain";
import type { z } from "zod";
import type { EngineConfig } from "../shared/config.ts";
import { poolPolicyFromRow } from "./pool-policy.ts";

// The input side: callers in-process (tests, benches) may leave the runner fields to their defaults.
type RegisterBody = z.input<typeof agentProtocol.registerSessionRequest>;

/**
 * A host agent announces its labels (isolation class included) and capacity; each process start is a
 * new session. A host weaker than its pool's minimum isolation is refused here, at start, with the
 * setting to change; the claim re-checks every placement rule anyway (the pool may change later).
 */
export async function registerSession(
  db: Db,
  cfg: EngineConfig,
  input: { agentTokenId: string; pool: string; body: RegisterBody },
): Promise<{ sessionId: string; pool: string; leaseTtlMs: number; heartbeatMs: number }> {
  const pools = await db.$queryRaw<
    {
      min_isolation: "process" | "microvm";
      admits_untrusted: boolean;
      untrusted_on_process: boolean;
      owner_org_id: string | null;
      development: boolean;
    }[]
  >`SELECT min_isolation, admits_untrusted, untrusted_on_process, owner_org_id, development FROM pool WHERE name = ${input.pool}`;
  const policy = poolPolicyFromRow(input.pool, pools[0]);
  if (!isolationAtLeast(input.body.labels.isolation, policy.minIsolation))
    throw new DomainError(
      "POOL.ISOLATION_TOO_WEAK",
      `pool ${input.pool} requires ${policy.minIsolation} isolation and this host reports ${input.body.labels.isolation}: ` +
        `run the agent with KILN_SANDBOX_DRIVER=microvm, or (an operator, for a pool only one org or one operator uses) ` +
        `npm run kiln -- pool set ${input.pool} --isolation process --org <org>|--development`,
    );
  const rows = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO agent_session (agent_token_id, pool, hostname, labels, capacity, runner_labels, sizes)
    VALUES (${input.agentTokenId}::uuid, ${input.pool}, ${input.body.hostname}, ${JSON.stringify(input.body.labels)}::jsonb, ${input.body.capacity},
            ${[...new Set(input.body.runner_labels ?? [])].sort()}::text[], ${[...new Set(input.body.sizes ?? [DEFAULT_RUNNER_SIZE])]}::text[])
    RETURNING id`;
  const id = rows[0]?.id;
  if (!id) throw new DomainError("SESSION.NOT_FOUND", "session insert failed");
  return { sessionId: id, pool: input.pool, leaseTtlMs: cfg.leaseTtlMs, heartbeatMs: cfg.heartbeatMs };
}
