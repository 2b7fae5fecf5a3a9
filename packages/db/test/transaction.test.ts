import { beforeAll, describe, expect, it } from "vitest";
import { sqlPool } from "../src/client.ts";
import { withTx } from "../src/transaction.ts";
import { isRetryableTxError, sqlStateOf } from "../src/tx-retry.ts";
import { useMigratedDb } from "./support.ts";

const t = useMigratedDb();

/** Resolves once `n` callers have arrived: holds concurrent transactions at the same point. */
function barrier(n: number): () => Promise<void> {
  let arrived = 0;
  let open: () => void = () => undefined;
  const opened = new Promise<void>((r) => (open = r));
  return async () => {
    if (++arrived === n) open();
    await opened;
  };
}

beforeAll(async () => {
  await t.db().$executeRawUnsafe("CREATE TABLE tx_probe (k int NOT NULL, v int NOT NULL)");
  await t.db().$executeRawUnsafe("CREATE TABLE tx_unique (id int PRIMARY KEY)");
});

// Write skew: each transaction reads the sum of k's rows, then inserts a row derived from it. Under
// SERIALIZABLE the two cannot both commit when their reads overlap, so PostgreSQL fails one with
// 40001; run again from the start, it sees the other's row and commits.
describe("withTx retries a serialization failure under SERIALIZABLE", () => {
  it("through Prisma", async () => {
    const db = t.db();
    const meet = barrier(2);
    let runs = 0;
    const one = (k: number) =>
      withTx(
        db,
        "probe-prisma",
        async (tx) => {
          const first = ++runs <= 2;
          const rows = await tx.$queryRaw<{ s: bigint | null }[]>`SELECT sum(v) AS s FROM tx_probe WHERE k = ${k}`;
          if (first) await meet();
          await tx.$executeRaw`INSERT INTO tx_probe (k, v) VALUES (${k}, ${Number(rows[0]?.s ?? 0n) + 1})`;
        },
        { isolation: "Serializable" },
      );
    await Promise.all([one(1), one(1)]);
    expect(runs).toBe(3);
    const rows = await db.$queryRaw<{ v: number }[]>`SELECT v FROM tx_probe WHERE k = 1 ORDER BY v`;
    expect(rows.map((r) => r.v)).toEqual([1, 2]);
  });

  it("through plain node-postgres", async () => {
    const pool = sqlPool(t.db());
    const meet = barrier(2);
    let runs = 0;
    const one = (k: number) =>
      withTx(
        pool,
        "probe-sql",
        async (c) => {
          const first = ++runs <= 2;
          const rows = await c.query<{ s: string | null }>("SELECT sum(v) AS s FROM tx_probe WHERE k = $1", [k]);
          if (first) await meet();
          await c.query("INSERT INTO tx_probe (k, v) VALUES ($1, $2)", [k, Number(rows.rows[0]?.s ?? 0) + 1]);
        },
        { isolation: "Serializable" },
      );
    await Promise.all([one(2), one(2)]);
    expect(runs).toBe(3);
    const rows = await pool.query<{ v: number }>("SELECT v FROM tx_probe WHERE k = 2 ORDER BY v");
    expect(rows.rows.map((r) => r.v)).toEqual([1, 2]);
  });

  it("and the failure it retried is a real 40001 (seen with retries off)", async () => {
    const db = t.db();
    for (const via of ["prisma", "sql"] as const) {
      const meet = barrier(2);
      const k = via === "prisma" ? 3 : 4;
      const body = async (q: (text: string, ...v: number[]) => Promise<number>) => {
        const s = await q("SELECT coalesce(sum(v), 0)::int AS s FROM tx_probe WHERE k = $1", k);
        await meet();
        await q("INSERT INTO tx_probe (k, v) VALUES ($1, $2)", k, s + 1);
      };
      const one = () =>
        via === "prisma"
          ? withTx(
              db,
              "probe-once",
              (tx) =>
                body(async (text, ...v) => {
                  const r = await tx.$queryRawUnsafe<{ s?: number }[]>(text, ...v);
                  return r[0]?.s ?? 0;
                }),
              { isolation: "Serializable", retries: 0 },
            )
          : withTx(
              sqlPool(db),
              "probe-once",
              (c) =>
                body(async (text, ...v) => {
                  const r = await c.query<{ s?: number }>(text, v);
                  return r.rows[0]?.s ?? 0;
                }),
              { isolation: "Serializable", retries: 0 },
            );
      const settled = await Promise.allSettled([one(), one()]);
      const failed = settled.filter((s) => s.status === "rejected");
      expect(failed, via).toHaveLength(1);
      const reason = (failed[0] as PromiseRejectedResult).reason as Error & { txName?: string };
      expect(sqlStateOf(reason), via).toBe("40001");
      expect(isRetryableTxError(reason), via).toBe(true);
      expect(reason.txName).toBe("probe-once");
    }
  });
});

describe("withTx does not retry a unique violation", () => {
  it("through either driver", async () => {
    const db = t.db();
    await db.$executeRaw`INSERT INTO tx_unique (id) VALUES (1)`;
    let prismaRuns = 0;
    const viaPrisma = await withTx(db, "dup-prisma", async (tx) => {
      prismaRuns++;
      await tx.$executeRaw`INSERT INTO tx_unique (id) VALUES (1)`;
    }).catch((e: unknown) => e);
    let sqlRuns = 0;
    const viaSql = await withTx(sqlPool(db), "dup-sql", async (c) => {
      sqlRuns++;
      await c.query("INSERT INTO tx_unique (id) VALUES (1)");
    }).catch((e: unknown) => e);
    expect(prismaRuns).toBe(1);
    expect(sqlRuns).toBe(1);
    for (const e of [viaPrisma, viaSql]) {
      expect(e).toBeInstanceOf(Error);
      expect(sqlStateOf(e)).toBe("23505");
      expect(isRetryableTxError(e)).toBe(false);
    }
    expect((viaSql as { txName?: string }).txName).toBe("dup-sql");
  });
});
