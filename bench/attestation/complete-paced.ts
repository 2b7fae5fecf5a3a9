// The attestation bench's completer, in a process of its own as completions are in production (the
// web server's agent API, not the workers). Two modes, at a steady rate, up to 16 (outbox: 32) at once:
//   complete: completeAttempt on claimed jobs (the whole completion transaction);
//   outbox:   for jobs already completed, commits exactly what the completion transaction adds for
//             the attestor (its attestation.create outbox row and the relay's NOTIFY), so the
//             attestor's path can be offered rates the completion path cannot reach here.
// Prints each commit's time on the machine's clock (ms since the epoch, sub-millisecond), which the
// bench compares with the time the attestor committed the job.
// Usage (run by bench/attestation/run.ts): tsx complete-paced.ts <url> <tickets.json> <rate> <mode>
import { readFile } from "node:fs/promises";
import { createDb, sqlPool } from "@kiln/db";
import type { JobTicket } from "@kiln/engine";
import { complete } from "./seed.ts";

const [url, file, rateArg, mode] = process.argv.slice(2);
if (!url || !file || !rateArg || (mode !== "complete" && mode !== "outbox"))
  throw new Error("usage: complete-paced.ts <url> <tickets.json> <rate> complete|outbox");
const rate = Number(rateArg);
const tickets = JSON.parse(await readFile(file, "utf8")) as (JobTicket & { orgId: string })[];
const db = createDb({ url, max: 16 });
const sql = sqlPool(db);
const commit = async (t: JobTicket & { orgId: string }) => {
  if (mode === "complete") return complete(db, t);
  const payload = JSON.stringify({ jobId: t.jobId, runId: t.runId, orgId: t.orgId, epoch: t.epoch });
  return sql.query({
    name: "bench-attest-outbox",
    text: `WITH o AS (INSERT INTO outbox (topic, payload, dedupe_key) VALUES ('attestation.create', $1::jsonb, $2) RETURNING 1)
           SELECT pg_notify('kiln_outbox', 'attestation.create') FROM o`,
    values: [payload, t.jobId],
  });
};
const now = () => performance.timeOrigin + performance.now();
const committedAt: Record<string, number> = {};
const inFlight = new Set<Promise<void>>();
const t0 = Date.now();
for (const [i, t] of tickets.entries()) {
  const due = t0 + (i * 1000) / rate;
  if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
  while (inFlight.size >= (mode === "outbox" ? 32 : 16)) await Promise.race(inFlight);
  const p: Promise<void> = commit(t).then(() => {
    committedAt[t.jobId] = now();
    inFlight.delete(p);
  });
  inFlight.add(p);
}
await Promise.all(inFlight);
const seconds = (Date.now() - t0) / 1000;
await db.$disconnect();
process.stdout.write(JSON.stringify({ offeredPerSec: tickets.length / seconds, committedAt }));
