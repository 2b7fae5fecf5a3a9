// Plain node-postgres for the hot paths. The log journal's byte path came first: Prisma's client
// engine round-trips every Bytes parameter through base64, ~3x slower for 64 KiB chunks
// (docs/adr/0006-logs.md). The claim and webhook acceptance followed: there the cost was Prisma's
// ~1 ms of Node CPU per statement (docs/adr/0015-hot-paths-on-plain-sql.md). Everything else stays
// on Prisma and withTx. The engine sees only this structural port (pg.Pool satisfies it).
export interface SqlResult<R> {
  rows: R[];
  rowCount: number | null;
}
export interface SqlQuery {
  name?: string;
  text: string;
  values?: unknown[];
}
export interface SqlClient {
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    q: string | SqlQuery,
    values?: unknown[],
  ): Promise<SqlResult<R>>;
  release(err?: Error | boolean): void;
  on(event: "error", listener: (err: Error) => void): unknown;
  off(event: "error", listener: (err: Error) => void): unknown;
}
export interface SqlPool {
  connect(): Promise<SqlClient>;
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    q: string | SqlQuery,
    values?: unknown[],
  ): Promise<SqlResult<R>>;
}

// Serialization failure and deadlock: worth another try; anything else is a real error.
const RETRYABLE = new Set(["40001", "40P01"]);

/** A named READ COMMITTED transaction on the pool, retried like @kiln/db's withTx. */
export async function withJournalTx<T>(
  pool: SqlPool,
  name: string,
  fn: (c: SqlClient) => Promise<T>,
  retries = 5,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const client = await pool.connect();
    let broken = false;
    // node-postgres removes the pool's idle 'error' listener while a client is checked out: a
    // session the server ends mid-transaction (failover, restart, pg_terminate_backend) would emit
    // 'error' with no listener, an uncaught exception that takes the whole process down. The
    // failing query rejects as well; this only marks the connection broken.
    const onError = () => {
      broken = true;
    };
    client.on("error", onError);
    try {
      await client.query("BEGIN");
      const out = await fn(client);
      await client.query("COMMIT");
      return out;
    } catch (e) {
      await client.query("ROLLBACK").catch(() => {
        broken = true; // the connection is unusable; drop it from the pool
      });
      const code = (e as { code?: unknown }).code;
      if (typeof code === "string" && RETRYABLE.has(code) && attempt < retries) {
        await new Promise((r) => setTimeout(r, 5 + Math.random() * 20 * (attempt + 1)));
        continue;
      }
      if (e instanceof Error && !("txName" in e)) Object.assign(e, { txName: name });
      throw e;
    } finally {
      client.off("error", onError);
      client.release(broken);
    }
  }
}

/** BIGINT columns arrive as strings; log sizes stay far below 2^53. */
export function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v);
}
