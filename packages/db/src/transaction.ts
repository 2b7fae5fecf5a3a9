import type { Db, Tx } from "./client.ts";
import type { SqlClient, SqlPool } from "./sql-client.ts";
import { isRetryableTxError } from "./tx-retry.ts";

export type Isolation = "ReadCommitted" | "RepeatableRead" | "Serializable";

export interface TxOptions {
  /** READ COMMITTED unless a caller needs more; the guarded updates are written for it. */
  isolation?: Isolation;
  /** Further runs after a retryable failure (serialization failure, deadlock). */
  retries?: number;
  /** Prisma only: how long the interactive transaction may stay open. */
  timeoutMs?: number;
}

const BEGIN: Record<Isolation, string> = {
  ReadCommitted: "BEGIN",
  RepeatableRead: "BEGIN ISOLATION LEVEL REPEATABLE READ",
  Serializable: "BEGIN ISOLATION LEVEL SERIALIZABLE",
};

/**
 * The one way to write (conventions 7): a named transaction with an explicit isolation level, run
 * again from the start after a serialization failure or a deadlock (isRetryableTxError), never
 * after anything else. Two drivers, one loop: given a Db it is a Prisma interactive transaction and
 * `fn` gets a Tx; given a SqlPool (`sqlPool(db)`, the plain node-postgres hot paths of ADR 0015) it
 * is BEGIN ... COMMIT on one checked-out connection and `fn` gets that SqlClient. The isolation
 * level rides on the BEGIN, so READ COMMITTED costs exactly BEGIN and COMMIT, no extra round trip.
 *
 * `fn` may run more than once: it has no side effects outside the transaction (outbox rows commit
 * with the state change, conventions 8). A failure that escapes carries `txName`.
 */
export function withTx<T>(db: Db, name: string, fn: (tx: Tx) => Promise<T>, opts?: TxOptions): Promise<T>;
export function withTx<T>(pool: SqlPool, name: string, fn: (c: SqlClient) => Promise<T>, opts?: TxOptions): Promise<T>;
export async function withTx<T>(
  target: Db | SqlPool,
  name: string,
  fn: ((tx: Tx) => Promise<T>) | ((c: SqlClient) => Promise<T>),
  opts: TxOptions = {},
): Promise<T> {
  const runOnce = isPrisma(target)
    ? () => prismaTx(target, fn as (tx: Tx) => Promise<T>, opts)
    : () => sqlTx(target, fn as (c: SqlClient) => Promise<T>, opts);
  const retries = opts.retries ?? 5;
  for (let attempt = 0; ; attempt++) {
    try {
      return await runOnce();
    } catch (e) {
      if (attempt < retries && isRetryableTxError(e)) {
        // Jittered and growing: the transactions that collided should not collide again in step.
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        continue;
      }
      if (e instanceof Error && !("txName" in e)) Object.assign(e, { txName: name });
      throw e;
    }
  }
}

function isPrisma(target: Db | SqlPool): target is Db {
  return typeof (target as Partial<Db>).$transaction === "function";
}

function prismaTx<T>(db: Db, fn: (tx: Tx) => Promise<T>, opts: TxOptions): Promise<T> {
  return db.$transaction(fn, {
    isolationLevel: opts.isolation ?? "ReadCommitted",
    maxWait: 10_000,
    timeout: opts.timeoutMs ?? 15_000,
  });
}

async function sqlTx<T>(pool: SqlPool, fn: (c: SqlClient) => Promise<T>, opts: TxOptions): Promise<T> {
  const client = await pool.connect();
  let broken = false;
  // node-postgres removes the pool's idle 'error' listener while a client is checked out: a session
  // the server ends mid-transaction (failover, restart, pg_terminate_backend) would emit 'error'
  // with no listener, an uncaught exception that takes the whole process down. The failing query
  // rejects as well; this only marks the connection broken.
  const onError = () => {
    broken = true;
  };
  client.on("error", onError);
  try {
    await client.query(BEGIN[opts.isolation ?? "ReadCommitted"]);
    const out = await fn(client);
    await client.query("COMMIT");
    return out;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {
      broken = true; // the connection is unusable; drop it from the pool
    });
    throw e;
  } finally {
    client.off("error", onError);
    client.release(broken);
  }
}
