// Plain node-postgres for the hot paths. The log journal's byte path came first: Prisma's client
// engine round-trips every Bytes parameter through base64, ~3x slower for 64 KiB chunks
// (docs/adr/0006-logs.md). The claim and webhook acceptance followed: there the cost was Prisma's
// ~1 ms of Node CPU per statement (docs/adr/0015-hot-paths-on-plain-sql.md). Everything else stays
// on Prisma. Both write through @kiln/db's withTx; the engine sees only @kiln/db's structural port.
export type { SqlClient, SqlPool } from "@kiln/db";

/** BIGINT columns arrive as strings; log sizes stay far below 2^53. */
export function num(v: unknown): number {
  return typeof v === "number" ? v : Number(v);
}
