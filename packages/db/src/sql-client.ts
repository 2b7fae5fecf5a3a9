// The plain node-postgres port for the hot paths (claim, webhook acceptance, the log journal; ADR
// 0015 and 0006). Structural so that callers depend on the shape, not on pg: `pg.Pool` (what
// `sqlPool(db)` returns) satisfies SqlPool, and a checked-out `pg.PoolClient` satisfies SqlClient.
export interface SqlResult<R> {
  rows: R[];
  rowCount: number | null;
}
export interface SqlQuery {
  /** A name makes node-postgres prepare the statement once per connection. */
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
