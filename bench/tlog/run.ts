// Transparency log benchmark (issue 17, docs/adr/0026), one run, one embedded PostgreSQL (durable
// settings), each measurement beside its baseline, rounds interleaved:
//   appends/s: W concurrent writers, each a withTx transaction appending one ~1.5 KiB entry through
//     tlog_append (sequencer row lock, dedupe lookup, leaf + parent hashes); baseline: the same
//     transaction inserting the same bytes into an unsequenced table with a unique key (what any
//     idempotent write costs);
//   entry -> checkpoint: appends at a steady rate while a signer loop runs every --tick ms (the
//     workers' sign-tlog-checkpoint job does the same), latency from an append's commit to the first
//     checkpoint that covers it;
//   proof latency at size N: getInclusionProof / getConsistencyProof from the stored subtree hashes,
//     vs the baseline of reading all N leaf hashes and computing the same proof in memory.
//   (and, beside them, BATCH entries per transaction in one statement: appendTlogEntries)
// Usage: npm run bench -- tlog [--writers 8] [--seconds 5] [--rounds 3] [--size 20000] [--tick 1000] [--batch 64]
import { randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { withTx, type Db } from "@kiln/db";
import { tlog } from "@kiln/domain";
import {
  appendTlogEntries,
  appendTlogEntry,
  getConsistencyProof,
  getInclusionProof,
  latestCheckpoint,
  logSigner,
  signCheckpoint,
  tlogHasher,
  tlogSize,
} from "@kiln/engine";
import { startPlatform } from "@kiln/testkit";
import { median, ms, percentile } from "../lib/stats.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const WRITERS = Number(arg("writers", "8"));
const SECONDS = Number(arg("seconds", "5"));
const ROUNDS = Number(arg("rounds", "3"));
const SIZE = Number(arg("size", "20000"));
const TICK = Number(arg("tick", "1000"));
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);

// About the size of a DSSE envelope holding a SLSA v1 statement with a few subjects.
const body = () => randomBytes(1100).toString("base64");
let seq = 0;

type Kind = "tlog" | "tlog-async" | "tlog-batch" | "plain";
// tlog-batch: each transaction appends BATCH entries in one statement (appendTlogEntries, ADR 0026
// "Batched appends"), as the attestor does with a pg-boss fetch.
const BATCH = Number(arg("batch", "64"));

async function run(db: Db, kind: Kind): Promise<{ perSec: number; lat: number[] }> {
  const lat: number[] = [];
  const until = performance.now() + SECONDS * 1000;
  let n = 0;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (performance.now() < until) {
        const key = `bench-${kind}-${seq++}`;
        const bytes = Buffer.from(body());
        const t = performance.now();
        if (kind === "tlog-batch") {
          const entries = Array.from({ length: BATCH }, () => ({
            kind: "bench",
            bytes: Buffer.from(body()),
            dedupeKey: `bench-${kind}-${seq++}`,
          }));
          await withTx(db, "bench-batch", (tx) => appendTlogEntries(tx, entries));
          lat.push(performance.now() - t);
          n += BATCH;
          continue;
        }
        await withTx(db, `bench-${kind}`, async (tx) => {
          // tlog-async: the commit does not wait for its WAL flush (see docs/adr/0026 on why a
          // checkpoint can still never cover a lost entry); the row lock is then held for less.
          if (kind === "tlog-async") await tx.$executeRaw`SET LOCAL synchronous_commit = off`;
          if (kind !== "plain") await appendTlogEntry(tx, { kind: "bench", bytes, dedupeKey: key });
          else
            await tx.$executeRaw`INSERT INTO bench_plain (dedupe_key, body) VALUES (${key}, ${bytes}) ON CONFLICT DO NOTHING`;
        });
        lat.push(performance.now() - t);
        n++;
      }
    }),
  );
  return { perSec: n / SECONDS, lat };
}

async function checkpointLatency(db: Db, ratePerSec: number, seconds: number): Promise<number[]> {
  const signer = await logSigner(db, { origin: "bench.kiln.test/tlog", kek: new Uint8Array(randomBytes(32)) });
  const head = { headFile: path.join(mkdtempSync(path.join(os.tmpdir(), "kiln-bench-tlog-")), "signed-head.json") };
  await signCheckpoint(db, signer, head);
  const committed: { index: number; at: number }[] = [];
  let stop = false;
  const signerLoop = (async () => {
    const lat: number[] = [];
    while (!stop || committed.length > 0) {
      await new Promise((r) => setTimeout(r, TICK));
      await signCheckpoint(db, signer, head);
      const cp = await latestCheckpoint(db);
      const now = performance.now();
      while (committed.length > 0 && cp && committed[0]!.index < cp.size) lat.push(now - committed.shift()!.at);
      if (stop && committed.length === 0) break;
    }
    return lat;
  })();
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const t = performance.now();
    const r = await withTx(db, "bench-cp", (tx) =>
      appendTlogEntry(tx, { kind: "bench", bytes: Buffer.from(body()), dedupeKey: `bench-cp-${seq++}` }),
    );
    committed.push({ index: r.index, at: performance.now() });
    const wait = 1000 / ratePerSec - (performance.now() - t);
    if (wait > 0) await new Promise((res) => setTimeout(res, wait));
  }
  stop = true;
  return signerLoop;
}

async function naiveInclusion(db: Db, index: number, size: number): Promise<Uint8Array[]> {
  const rows = await db.$queryRaw<{ hash: Uint8Array }[]>`
    SELECT hash FROM tlog_node WHERE level = 0 AND idx < ${size} ORDER BY idx`;
  const leaves = rows.map((r) => new Uint8Array(r.hash));
  return tlog.inclusionRanges(index, size).map((r) => tlog.rangeHashFromLeaves(tlogHasher, leaves, r));
}

async function timeEach(n: number, f: (i: number) => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await f(i);
    out.push(performance.now() - t);
  }
  return out;
}

const row = (name: string, xs: number[]) =>
  console.log(
    `${name.padEnd(52)} p50 ${ms(percentile(xs, 50)).padStart(10)}  p95 ${ms(percentile(xs, 95)).padStart(10)}  (n=${xs.length})`,
  );

const platform = await startPlatform({
  postgres: "durable",
  redis: false,
  s3: false,
  developmentPool: null,
  log: progress,
});
try {
  const db = platform.db;
  await db.$executeRawUnsafe(
    `CREATE TABLE bench_plain (id BIGSERIAL PRIMARY KEY, dedupe_key TEXT NOT NULL UNIQUE, body BYTEA NOT NULL)`,
  );
  const results: Record<Kind, { perSec: number[]; lat: number[] }> = {
    tlog: { perSec: [], lat: [] },
    "tlog-async": { perSec: [], lat: [] },
    "tlog-batch": { perSec: [], lat: [] },
    plain: { perSec: [], lat: [] },
  };
  const orders: Kind[][] = [
    ["tlog", "tlog-async", "tlog-batch", "plain"],
    ["plain", "tlog-batch", "tlog", "tlog-async"],
    ["tlog-batch", "tlog-async", "plain", "tlog"],
  ];
  for (let r = 0; r < ROUNDS; r++) {
    for (const kind of orders[r % 3]!) {
      const x = await run(db, kind);
      results[kind].perSec.push(x.perSec);
      results[kind].lat.push(...x.lat);
      progress(`round ${r + 1} ${kind}: ${x.perSec.toFixed(0)}/s`);
    }
  }
  console.log(`\nappends, ${WRITERS} concurrent writers, ${SECONDS} s x ${ROUNDS} rounds (median of rounds):`);
  const a = median(results.tlog.perSec);
  const c = median(results["tlog-async"].perSec);
  const b = median(results.plain.perSec);
  const d = median(results["tlog-batch"].perSec);
  console.log(
    `  tlog_append                       ${a.toFixed(0).padStart(6)}/s   ratio to plain ${(a / b).toFixed(2)}`,
  );
  console.log(
    `  tlog_append, asynchronous commit  ${c.toFixed(0).padStart(6)}/s   ratio to plain ${(c / b).toFixed(2)}`,
  );
  console.log(
    `  tlog_append x${BATCH} per transaction   ${d.toFixed(0).padStart(6)}/s   ratio to plain ${(d / b).toFixed(2)}, to one per transaction ${(d / a).toFixed(1)}`,
  );
  console.log(`  plain insert (baseline)           ${b.toFixed(0).padStart(6)}/s`);
  console.log(
    `  rounds: ${JSON.stringify(Object.fromEntries(Object.entries(results).map(([k, v]) => [k, v.perSec.map(Math.round)])))}`,
  );
  row("  append transaction latency (tlog)", results.tlog.lat);
  row("  append transaction latency (tlog, async commit)", results["tlog-async"].lat);
  row(`  append transaction latency (tlog, ${BATCH} per transaction)`, results["tlog-batch"].lat);
  row("  insert transaction latency (plain baseline)", results.plain.lat);

  const cpLat = await checkpointLatency(db, 200, 10);
  row(`\nappend commit -> covering checkpoint (200/s, tick ${TICK} ms)`, cpLat);

  let n = await tlogSize(db);
  progress(`filling the log to ${SIZE} entries (now ${n})`);
  const pool = Array.from({ length: WRITERS }, async () => {
    while (n < SIZE) {
      n++;
      await withTx(db, "fill", (tx) =>
        appendTlogEntry(tx, { kind: "bench", bytes: Buffer.from(body()), dedupeKey: `fill-${seq++}` }),
      );
    }
  });
  await Promise.all(pool);
  const size = await tlogSize(db);
  const idx = (i: number) => (i * 7919) % size;
  console.log(`\nproofs at size ${size}:`);
  const rounds: Record<string, number[]> = { stored: [], naive: [], cons: [] };
  for (let r = 0; r < ROUNDS; r++) {
    rounds.stored!.push(...(await timeEach(100, (i) => getInclusionProof(db, idx(i + r * 100), size))));
    rounds.naive!.push(...(await timeEach(5, (i) => naiveInclusion(db, idx(i + r * 5), size))));
    rounds.cons!.push(...(await timeEach(100, (i) => getConsistencyProof(db, 1 + (idx(i) % (size - 1)), size))));
  }
  // Same answers: the stored-node proof equals the in-memory one, or the figures mean nothing.
  const stored = await getInclusionProof(db, idx(3), size);
  const naive = await naiveInclusion(db, idx(3), size);
  if (stored.length !== naive.length || stored.some((h, k) => !tlog.bytesEqual(h, naive[k]!)))
    throw new Error("stored-node and in-memory proofs differ");
  row("  inclusion proof from stored subtree hashes", rounds.stored!);
  row("  inclusion proof, baseline: read all leaves, rehash", rounds.naive!);
  row("  consistency proof from stored subtree hashes", rounds.cons!);
  console.log(`  ratio (baseline / stored, p50) ${(median(rounds.naive!) / median(rounds.stored!)).toFixed(0)}x`);
} finally {
  await platform.stop();
}
