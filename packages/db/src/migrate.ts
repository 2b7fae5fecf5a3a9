import { createHash, randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

// Prisma 7's `migrate deploy` needs a schema-engine binary it downloads at run time, which this
// network forbids (docs/adr/0002-database-migrations.md). This runner applies prisma/migrations in
// order, each in its own transaction under an advisory lock, and records them in Prisma's own
// `_prisma_migrations` table so the history stays readable by Prisma tooling.
const MIGRATIONS_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../prisma/migrations");
const LOCK_KEY = 72_616_001; // arbitrary, constant: serialises concurrent `up`s and test setups

/**
 * Applies every migration in `dir` (prisma/migrations unless a test passes a divergent copy) that the
 * database has not recorded yet, by directory name: renaming an applied migration re-applies it.
 */
export async function migrateDatabase(
  url: string,
  log: (m: string) => void = () => {},
  dir: string = MIGRATIONS_DIR,
): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query("SELECT pg_advisory_lock($1)", [LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const done = await client.query<{ migration_name: string; checksum: string }>(
      `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
    );
    const have = new Map(done.rows.map((r) => [r.migration_name, r.checksum]));
    const names = (await readdir(dir, { withFileTypes: true }))
      .filter((d) => d.isDirectory())
      .map((d) => d.name)
      .sort();
    for (const name of names) {
      const sql = await readFile(path.join(dir, name, "migration.sql"), "utf8");
      const checksum = createHash("sha256").update(sql).digest("hex");
      const prior = have.get(name);
      if (prior !== undefined) {
        // An edited, already-applied migration means two databases could disagree silently.
        if (prior !== checksum) throw new Error(`migration ${name} was modified after it was applied`);
        continue;
      }
      await client.query("BEGIN");
      try {
        await client.query(sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), checksum, name],
        );
        await client.query("COMMIT");
      } catch (e) {
        await client.query("ROLLBACK");
        throw new Error(`migration ${name} failed: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
      applied.push(name);
      log(`applied migration ${name}`);
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
  return applied;
}

/** Create the database named in `url` when it does not exist (used by `up` against a given server). */
export async function ensureDatabase(url: string): Promise<void> {
  const u = new URL(url);
  const name = decodeURIComponent(u.pathname.replace(/^\//, "")) || "postgres";
  u.pathname = "/postgres";
  const client = new pg.Client({ connectionString: u.toString() });
  await client.connect();
  try {
    const r = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (r.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
  } finally {
    await client.end();
  }
}
