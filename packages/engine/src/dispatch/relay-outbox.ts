import { withTx, type Db } from "@kiln/db";

/**
 * A committed row as stored: the relay checks it against the topic registry
 * (`parseOutboxMessage`) before it decides where it goes.
 */
export interface OutboxMessage {
  id: bigint;
  topic: string;
  payload: unknown;
}

/**
 * Publishes committed outbox rows, oldest first, then marks them. Crash windows (seed 003 Q2):
 * before publishing, the row stays unpublished and the next pass sends it; after publishing but
 * before marking, it is sent again and the claim's guarded update absorbs the duplicate. Row locks
 * with SKIP LOCKED keep two relays from working the same rows at the same time.
 */
export async function relayOutbox(
  db: Db,
  publish: (messages: OutboxMessage[]) => Promise<void>,
  limit = 200,
): Promise<number> {
  return withTx(
    db,
    "relay-outbox",
    async (tx) => {
      const rows = await tx.$queryRaw<OutboxMessage[]>`
      SELECT id, topic, payload FROM outbox WHERE published_at IS NULL AND deliver_after <= now()
      ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`;
      if (rows.length === 0) return 0;
      // Publishing goes to the work queues on their own connection: it is the relay's one side
      // effect, and it is safe to repeat.
      await publish(rows);
      await tx.$executeRaw`UPDATE outbox SET published_at = now() WHERE id = ANY(${rows.map((r) => r.id)}::bigint[])`;
      return rows.length;
    },
    { timeoutMs: 30_000 },
  );
}

/** Seconds until the next deferred row becomes deliverable, so the relay can sleep precisely. */
export async function nextDeferredDelayMs(db: Db): Promise<number | null> {
  const rows = await db.$queryRaw<{ ms: number | null }[]>`
    SELECT (EXTRACT(EPOCH FROM (min(deliver_after) - now())) * 1000)::int AS ms FROM outbox WHERE published_at IS NULL`;
  const ms = rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.max(0, ms);
}
