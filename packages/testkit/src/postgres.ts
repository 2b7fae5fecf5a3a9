// Database harness for tests. Strategy: one PostgreSQL server per test run, migrations applied
// once into a *template* database, and every test (file) gets its own `CREATE DATABASE ...
// TEMPLATE` clone. Cloning is a file-level copy (tens of ms) instead of re-running migrations,
// and isolated databases let test files run in parallel without cleaning up after each other.
import { randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { startPostgres } from "./embedded-postgres.ts";

export interface TestPostgres {
  /** Server URL (maintenance database); pass it to createTemplate/cloneDatabase/dropDatabase. */
  url: string;
  /** false when KILN_TEST_DATABASE_URL pointed us at an existing server. */
  embedded: boolean;
  stop(): Promise<void>;
}

/** Uses KILN_TEST_DATABASE_URL when set (CI service containers, a dev's own server); otherwise
 * boots a private embedded PostgreSQL in a temp dir on a free port, deleted again on stop(). */
export async function startTestPostgres(): Promise<TestPostgres> {
  const external = process.env.KILN_TEST_DATABASE_URL;
  if (external) return { url: external, embedded: false, stop: async () => {} };

  const tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-testpg-"));
  // mkdtemp makes a 0700 dir; as root, initdb/postgres run as the `postgres` user and must
  // be able to enter it to reach the data dir.
  await chmod(tmp, 0o755);
  try {
    const server = await startPostgres({
      dataDir: path.join(tmp, "data"),
      // Throwaway data: durability only costs time (initdb's final fsync, CREATE DATABASE,
      // commits, checkpoints).
      initdbFlags: ["--no-sync"],
      // Two test files at once may each run a whole stack (web, workers, agents, each with its
      // pools): the default 100 connections ran out ("too many clients already").
      postgresFlags: [
        "-c",
        "fsync=off",
        "-c",
        "synchronous_commit=off",
        "-c",
        "full_page_writes=off",
        "-c",
        "max_connections=400",
      ],
    });
    let stopped: Promise<void> | undefined;
    const stop = () => (stopped ??= server.stop().finally(() => rm(tmp, { recursive: true, force: true })));
    return { url: server.url, embedded: true, stop };
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** Database names go into SQL identifiers and URLs. PostgreSQL silently truncates identifiers
 * to 63 bytes (two long names could collide), so keep names short and plain. */
function checkName(name: string): string {
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
    throw new Error(`invalid database name ${JSON.stringify(name)} (use [A-Za-z_][A-Za-z0-9_]*, max 63 chars)`);
  }
  return name;
}

/** URL of database `name` on the same server as `serverUrl` (same credentials and options). */
export function databaseUrl(serverUrl: string, name: string): string {
  const url = new URL(serverUrl);
  url.pathname = `/${encodeURIComponent(checkName(name))}`;
  return url.toString();
}

/** A fresh name for a per-test database, e.g. `test_3f9a0c1e2b4d`. */
export function uniqueDatabaseName(prefix = "test"): string {
  return checkName(`${prefix}_${randomBytes(6).toString("hex")}`);
}

/** Runs `fn` with a short-lived connection to the server's maintenance database. */
async function withClient<T>(serverUrl: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  client.on("error", () => {}); // e.g. server shut down underneath us; the query rejects anyway
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** (Re)creates template database `name` and runs `migrate` against it. Afterwards the database
 * is marked IS_TEMPLATE and closed to connections: CREATE DATABASE ... TEMPLATE fails with
 * "source database is being accessed by other users" if anything (a pool the migrate callback
 * forgot to close, a stray test) is connected, so we kick such sessions and keep them out. */
export async function createTemplate(
  serverUrl: string,
  name: string,
  migrate: (url: string) => Promise<void>,
): Promise<void> {
  checkName(name);
  await dropDatabase(serverUrl, name);
  await withClient(serverUrl, (c) => c.query(`CREATE DATABASE ${c.escapeIdentifier(name)}`));
  await migrate(databaseUrl(serverUrl, name));
  await withClient(serverUrl, async (c) => {
    await c.query(`ALTER DATABASE ${c.escapeIdentifier(name)} WITH IS_TEMPLATE true ALLOW_CONNECTIONS false`);
    await c.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
      [name],
    );
  });
}

/** Creates database `newName` as a copy of `templateName` and returns its URL.
 * Copy strategy: PostgreSQL 15+ defaults to WAL_LOG (~75 ms for a 40-table schema here);
 * FILE_COPY is ~30 ms but checkpoints twice, which is only cheap with fsync=off (as on our
 * embedded test server) and is 1-2x slower than WAL_LOG on a durable server. So pick
 * FILE_COPY exactly when the server runs with fsync off. */
export async function cloneDatabase(serverUrl: string, templateName: string, newName: string): Promise<string> {
  checkName(templateName);
  checkName(newName);
  await withClient(serverUrl, async (c) => {
    const { rows } = await c.query<{ filecopy: boolean }>(
      "SELECT current_setting('server_version_num')::int >= 150000 AND current_setting('fsync') = 'off' AS filecopy",
    );
    const strategy = rows[0]?.filecopy ? " STRATEGY FILE_COPY" : "";
    await c.query(
      `CREATE DATABASE ${c.escapeIdentifier(newName)} TEMPLATE ${c.escapeIdentifier(templateName)}${strategy}`,
    );
  });
  return databaseUrl(serverUrl, newName);
}

/** Drops `name` if it exists, disconnecting any sessions still using it (WITH (FORCE)).
 * Works for templates made by createTemplate too (PostgreSQL refuses to drop a database while
 * it is flagged IS_TEMPLATE, so the flag is cleared first). */
export async function dropDatabase(serverUrl: string, name: string): Promise<void> {
  checkName(name);
  await withClient(serverUrl, async (c) => {
    const { rows } = await c.query<{ datistemplate: boolean }>(
      "SELECT datistemplate FROM pg_database WHERE datname = $1",
      [name],
    );
    if (rows[0]?.datistemplate) await c.query(`ALTER DATABASE ${c.escapeIdentifier(name)} WITH IS_TEMPLATE false`);
    await c.query(`DROP DATABASE IF EXISTS ${c.escapeIdentifier(name)} WITH (FORCE)`);
  });
}
