import { PrismaPg } from "@prisma/adapter-pg";
import pg from "pg";
import { PrismaClient } from "./generated/prisma/client.ts";

export type Db = PrismaClient;
/** An open interactive transaction; data functions accept either (conventions rule 7). */
export type Tx = Parameters<Parameters<PrismaClient["$transaction"]>[0]>[0];
export type DbOrTx = Db | Tx;

export interface DbOptions {
  url: string;
  /** Pool size per process; the claim path holds a connection for one short transaction. */
  max?: number;
}

export function createDb(opts: DbOptions): Db {
  const pool = new pg.Pool({ connectionString: opts.url, max: opts.max ?? 10 });
  // Every connection gets a listener for its whole life. node-postgres takes the pool's idle
  // listener off a checked-out client, and the adapter's own transaction listener is gone once
  // the transaction ends (or times out) while the client may still be out: a session the server
  // then ends (failover, restart, pg_terminate_backend) emitted 'error' unheard, an uncaught
  // exception that killed the workers (e2e/faults/db-sessions-cut.test.ts). The failing query
  // rejects on its own; the pool drops the dead client.
  pool.on("connect", (client) => {
    client.on("error", () => undefined);
  });
  // An idle client's error is re-emitted on the pool itself (pg-pool's idle listener); unheard,
  // it is an uncaught exception. Seen when the server shut down under an idle pool (the log
  // benchmark's teardown): the pool has already discarded the client, nothing else to do.
  pool.on("error", () => undefined);
  const adapter = new PrismaPg(pool, { disposeExternalPool: true });
  const db = new PrismaClient({ adapter });
  pools.set(db, pool);
  return db;
}

const pools = new WeakMap<Db, pg.Pool>();

/**
 * The node-postgres pool under a Db, for the few hot paths that run as plain SQL (claim, webhook
 * acceptance, the log journal): each statement through Prisma's driver adapter costs about 1 ms of
 * Node CPU here, plain node-postgres about a tenth of that (docs/adr/0015-hot-paths-on-plain-sql.md).
 * Same pool, same connection budget; Prisma stays the default everywhere else.
 */
export function sqlPool(db: Db): pg.Pool {
  const pool = pools.get(db);
  if (!pool) throw new Error("this Db was not made by createDb");
  return pool;
}
