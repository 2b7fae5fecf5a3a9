import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

// An operator's reclaim notice (issue 22, docs/adr/0035): the cloud is taking an interruptible host
// back. The notice is left on the host's live sessions; the agent reads it in its next stats answer
// and stops as on SIGUSR2 (its jobs report host.reclaimed and go to on-demand capacity).

export interface ReclaimInput {
  pool: string;
  /** The host: its runner id or its name within the pool. */
  host: string;
  /** The caller's org, or null for a platform operator (every host). Scoped in the query. */
  orgId: string | null;
  actor: string;
}

export async function requestReclaim(
  db: Db,
  input: ReclaimInput,
): Promise<{ runnerId: string; name: string; pool: string; sessions: number }> {
  return withTx(db, "request-reclaim", async (tx) => {
    const hosts = await tx.$queryRaw<
      { id: string; name: string; org_id: string | null; agent_token_id: string; interruptible: boolean | null }[]
    >`
      SELECT r.id, r.name, r.org_id, r.agent_token_id, p.interruptible
      FROM runner r LEFT JOIN pool p ON p.name = r.pool
      WHERE r.pool = ${input.pool} AND (r.id::text = ${input.host} OR r.name = ${input.host})
        AND (${input.orgId}::uuid IS NULL OR r.org_id = ${input.orgId}::uuid)
      ORDER BY (r.id::text = ${input.host}) DESC, r.created_at DESC LIMIT 1`;
    const host = hosts[0];
    if (!host) throw new DomainError("FLEET.HOST_NOT_FOUND", `no host ${input.host} in pool ${input.pool}`);
    // A reclaim is what the cloud does to interruptible capacity; on-demand hosts are drained instead.
    if (host.interruptible !== true)
      throw new DomainError(
        "POOL.NOT_INTERRUPTIBLE",
        `pool ${input.pool} is not interruptible: drain the host instead (kiln pool set ${input.pool} --interruptible --serves <pool> to flag it)`,
      );
    const n = await tx.$executeRaw`
      UPDATE agent_session SET reclaim_requested_at = now(), reclaim_requested_by = ${input.actor}
      WHERE agent_token_id = ${host.agent_token_id}::uuid AND ended_at IS NULL AND reclaim_requested_at IS NULL`;
    const live = await tx.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM agent_session WHERE agent_token_id = ${host.agent_token_id}::uuid
        AND ended_at IS NULL AND reclaim_requested_at IS NOT NULL`;
    if ((live[0]?.n ?? 0) === 0)
      throw new DomainError("FLEET.NO_SESSION", `host ${host.name} has no live agent session`);
    await recordAuditEvent(tx, {
      orgId: host.org_id,
      kind: "runner.reclaim_requested",
      actor: input.actor,
      subject: host.id,
      data: { pool: input.pool, name: host.name, sessions_notified: n },
    });
    return { runnerId: host.id, name: host.name, pool: input.pool, sessions: live[0]?.n ?? 0 };
  });
}
