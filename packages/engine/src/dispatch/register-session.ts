import type { Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { z } from "zod";
import type { EngineConfig } from "../shared/config.ts";

export const registerSessionBody = z
  .object({
    hostname: z.string().min(1).max(200),
    capacity: z.number().int().min(1).max(1024),
    labels: z
      .object({
        os: z.string().max(50),
        arch: z.string().max(50),
        resource_class: z.string().max(50),
        isolation: z.enum(["microvm", "process"]),
      })
      .strict(),
  })
  .strict();

/** A host agent announces its pool labels and capacity; each process start is a new session. */
export async function registerSession(
  db: Db,
  cfg: EngineConfig,
  input: { agentTokenId: string; pool: string; body: z.infer<typeof registerSessionBody> },
): Promise<{ sessionId: string; pool: string; leaseTtlMs: number; heartbeatMs: number }> {
  const rows = await db.$queryRaw<{ id: string }[]>`
    INSERT INTO agent_session (agent_token_id, pool, hostname, labels, capacity)
    VALUES (${input.agentTokenId}::uuid, ${input.pool}, ${input.body.hostname}, ${JSON.stringify(input.body.labels)}::jsonb, ${input.body.capacity})
    RETURNING id`;
  const id = rows[0]?.id;
  if (!id) throw new DomainError("SESSION.NOT_FOUND", "session insert failed");
  return { sessionId: id, pool: input.pool, leaseTtlMs: cfg.leaseTtlMs, heartbeatMs: cfg.heartbeatMs };
}
