import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, inject } from "vitest";
import { createDb, type Db } from "../src/client.ts";

// @kiln/testkit depends on this package (it migrates with db's runner), so db's own tests clone the
// global setup's template with two statements of their own rather than import testkit: a workspace
// cycle otherwise (issue 29). testkit's cloneDatabase is the same CREATE DATABASE ... TEMPLATE.
async function onServer(serverUrl: string, sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A database cloned for this file from the template the global setup migrated (conventions 13). */
export function useMigratedDb(max = 4): { db: () => Db; url: () => string } {
  let db: Db | null = null;
  let url = "";
  const name = `db_${randomBytes(6).toString("hex")}`;
  beforeAll(async () => {
    const server = inject("pgServerUrl");
    await onServer(server, `CREATE DATABASE ${name} TEMPLATE ${pg.escapeIdentifier(inject("pgTemplate"))}`);
    const u = new URL(server);
    u.pathname = `/${name}`;
    url = u.toString();
    db = createDb({ url, max });
  });
  afterAll(async () => {
    await db?.$disconnect();
    await onServer(inject("pgServerUrl"), `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
  return {
    db: () => {
      if (!db) throw new Error("test database not ready");
      return db;
    },
    url: () => url,
  };
}

/** A fresh, empty database's name and URL on the suite's server (no template: migrated from scratch). */
export function freshDatabase(prefix: string): { name: string; url: string } {
  const name = `${prefix}_${randomBytes(6).toString("hex")}`;
  const u = new URL(inject("pgServerUrl"));
  u.pathname = `/${name}`;
  return { name, url: u.toString() };
}

/** Drops a database this file made, even with connections still open. */
export function dropFreshDatabase(name: string): Promise<void> {
  return onServer(inject("pgServerUrl"), `DROP DATABASE IF EXISTS ${pg.escapeIdentifier(name)} WITH (FORCE)`);
}
