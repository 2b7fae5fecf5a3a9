import type { Db } from "@kiln/db";
import {
  type agentProtocol,
  AGENT_PROTOCOL_VERSION,
  DEFAULT_RUNNER_SIZE,
  DomainError,
  isolationAtLeast,
  protocolIncompatibility,
} from "@kiln/domain";
import type { z } from "zod";
import type { RegistryConfig } from "@kiln/oci";
import { registriesForAgents } from "../images/index.ts";
import type { EngineConfig } from "../config/index.ts";
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
  input: {
    agentTokenId: string;
    pool: string;
    body: RegisterBody;
    /** The platform's registries (KILN_REGISTRIES), told to the agent (issue 30). */
    registries?: RegistryConfig;
  },
): Promise<{
  sessionId: string;
  pool: string;
  leaseTtlMs: number;
  heartbeatMs: number;
  runnerId: string;
  protocolVersion: number;
  registries: RegistryConfig;
}> {
  // Issue 22: an agent speaking a protocol this control plane does not is refused before anything is written.
  const incompatible = protocolIncompatibility(input.body.protocol_version);
  if (incompatible) throw new DomainError("AGENT.PROTOCOL_INCOMPATIBLE", incompatible);
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
  const runnerLabels = [...new Set(input.body.runner_labels ?? [])].sort();
  const protocol = input.body.protocol_version ?? 1;
  // Every host credential has its runner row (issue 22): a registered host's was made at the
  // exchange; an operator-made credential's is made by its first session. Either way the session
  // refreshes what the host reports. One statement: the runner upsert and the session insert.
  const rows = await db.$queryRaw<{ id: string; runner_id: string }[]>`
    WITH h AS (
      INSERT INTO runner (org_id, pool, name, labels, isolation, protocol_version, agent_version, last_heartbeat_at,
                          agent_token_id, created_by)
      SELECT t.org_id, t.pool, left(${input.body.hostname}, 100), ${runnerLabels}::text[], ${input.body.labels.isolation},
             ${protocol}::int, ${input.body.agent_version ?? null}, now(), t.id, 'system:first-session'
      FROM agent_token t WHERE t.id = ${input.agentTokenId}::uuid
      ON CONFLICT (agent_token_id) DO UPDATE SET labels = EXCLUDED.labels, isolation = EXCLUDED.isolation,
        protocol_version = EXCLUDED.protocol_version, agent_version = EXCLUDED.agent_version, last_heartbeat_at = now()
      RETURNING id)
    INSERT INTO agent_session (agent_token_id, pool, hostname, labels, capacity, runner_labels, sizes, runner_id,
                               protocol_version, agent_version)
    SELECT ${input.agentTokenId}::uuid, ${input.pool}, ${input.body.hostname}, ${JSON.stringify(input.body.labels)}::jsonb, ${input.body.capacity},
           ${runnerLabels}::text[], ${[...new Set(input.body.sizes ?? [DEFAULT_RUNNER_SIZE])]}::text[], h.id,
           ${protocol}::int, ${input.body.agent_version ?? null}
    FROM h
    RETURNING id, runner_id`;
  const row = rows[0];
  if (!row) throw new DomainError("SESSION.NOT_FOUND", "session insert failed");
  return {
    sessionId: row.id,
    pool: input.pool,
    leaseTtlMs: cfg.leaseTtlMs,
    heartbeatMs: cfg.heartbeatMs,
    runnerId: row.runner_id,
    protocolVersion: AGENT_PROTOCOL_VERSION,
    registries: registriesForAgents(input.registries ?? {}, (pools[0]?.owner_org_id ?? null) !== null),
  };
}
