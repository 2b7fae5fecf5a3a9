import { createDb, type Db } from "@kiln/db";
import { DEFAULT_ENGINE_CONFIG, type EngineConfig } from "@kiln/engine";
import { PgBoss } from "pg-boss";
import { env } from "./env.ts";
import { DispatchWaiter } from "./dispatch-waiter.ts";

// One set of clients per server process, created lazily so `next build` never connects.
interface Services {
  db: Db;
  cfg: EngineConfig;
  boss: Promise<PgBoss>;
  waiter: DispatchWaiter;
}

const g = globalThis as unknown as { __kiln?: Services };

export function services(): Services {
  if (g.__kiln) return g.__kiln;
  const e = env();
  const cfg: EngineConfig = {
    ...DEFAULT_ENGINE_CONFIG,
    leaseTtlMs: e.KILN_LEASE_TTL_MS,
    heartbeatMs: e.KILN_HEARTBEAT_MS,
    retryBudget: e.KILN_RETRY_BUDGET,
    dispatchPolicy: e.KILN_DISPATCH_POLICY,
  };
  // The web process only sends and fetches: the workers own pg-boss's schema and maintenance.
  const boss = new PgBoss({ connectionString: e.DATABASE_URL, max: 3, supervise: false, schedule: false, migrate: false, createSchema: false });
  boss.on("error", (err: unknown) => console.error(JSON.stringify({ level: "error", msg: "pg-boss", err: String(err) })));
  g.__kiln = {
    db: createDb({ url: e.DATABASE_URL, max: e.KILN_DB_POOL }),
    cfg,
    boss: boss.start().then(() => boss),
    waiter: new DispatchWaiter(e.DATABASE_URL),
  };
  return g.__kiln;
}
