// Issue 28, from the attacker's side: someone holding the web app's (or the workers') database
// credential tries to rewrite the transparency log or change the schema. Real PostgreSQL, a clone of
// the migrated template, connected as the login roles the platform's processes use.
// It lives beside the harness that makes those roles (moved from packages/db in issue 29: db's own
// tests may not import testkit, which depends on db).
import { randomUUID } from "node:crypto";
import { createDb, type Db } from "@kiln/db";
import pg from "pg";
import { PgBoss } from "pg-boss";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "../postgres.ts";
import { ensureAppLoginRoles, type AppRoleUrls } from "./app-roles.ts";

/** A clone of the template the global setup migrated, connected as its owner. */
const owner = (() => {
  let db: Db | null = null;
  let url = "";
  const name = uniqueDatabaseName("roles");
  beforeAll(async () => {
    url = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), name);
    db = createDb({ url, max: 2 });
  });
  afterAll(async () => {
    await db?.$disconnect();
    await dropDatabase(inject("pgServerUrl"), name);
  });
  return {
    db: () => {
      if (!db) throw new Error("test database not ready");
      return db;
    },
    url: () => url,
  };
})();
let urls: AppRoleUrls;
const clients: pg.Client[] = [];

async function connect(url: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  clients.push(c);
  return c;
}

/** The statement fails with insufficient_privilege or "must be owner" (both SQLSTATE 42501). */
async function refused(c: pg.Client, sql: string, params: unknown[] = []): Promise<string> {
  const err: unknown = await c.query(sql, params).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, sql).not.toBeNull();
  expect((err as { code?: string }).code, `${sql}: ${String(err)}`).toBe("42501");
  return String(err);
}

let web: pg.Client;
let workers: pg.Client;

beforeAll(async () => {
  const roles = await ensureAppLoginRoles(owner.url());
  if (!roles) throw new Error("the test server's owner could not make the login roles");
  urls = roles;
  web = await connect(urls.web);
  workers = await connect(urls.workers);
  // A log with an entry and a checkpoint to attack, written the way the workers write it.
  await workers.query(`SELECT * FROM tlog_append('test', '\\x01'::bytea, 'k1')`);
  const root = (await workers.query<{ hash: Buffer }>(`SELECT hash FROM tlog_node WHERE level = 0 AND idx = 0`)).rows[0]
    ?.hash;
  await owner
    .db()
    .$executeRawUnsafe(
      `INSERT INTO tlog_checkpoint (size, root_hash, note, key_hash) VALUES (1, $1, 'note', '00000000')`,
      root,
    );
});

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
});

describe("the web app's database role", () => {
  it("connects as a member of kiln_web, not as the owner of anything", async () => {
    const r = await web.query<{ u: string; member: boolean; super: boolean; owns: number }>(
      `SELECT current_user AS u, pg_has_role(current_user, 'kiln_web', 'MEMBER') AS member,
              (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) AS super,
              (SELECT count(*)::int FROM pg_class c JOIN pg_roles o ON o.oid = c.relowner
                WHERE pg_has_role(current_user, o.oid, 'MEMBER')) AS owns`,
    );
    expect(r.rows[0]).toEqual({ u: "kiln_web_login", member: true, super: false, owns: 0 });
  });

  it("cannot drop or disable the log's append-only triggers, nor alter its tables", async () => {
    await refused(web, `DROP TRIGGER tlog_entry_append_only ON tlog_entry`);
    await refused(web, `ALTER TABLE tlog_entry DISABLE TRIGGER ALL`);
    await refused(web, `ALTER TABLE tlog_checkpoint ADD COLUMN x int`);
    await refused(web, `DROP TABLE tlog_node`);
    await refused(web, `DROP FUNCTION tlog_refuse_change() CASCADE`);
    await refused(
      web,
      `CREATE OR REPLACE FUNCTION tlog_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`,
    );
    await refused(web, `SET session_replication_role = replica`);
  });

  it("cannot write any of the log's tables, directly or through tlog_append", async () => {
    await refused(web, `UPDATE tlog_entry SET body = '\\x02'::bytea WHERE idx = 0`);
    await refused(web, `DELETE FROM tlog_node`);
    await refused(web, `TRUNCATE tlog_entry`);
    await refused(web, `INSERT INTO tlog_entry (idx, kind, dedupe_key, body) VALUES (1, 'x', 'k2', '\\x03'::bytea)`);
    await refused(web, `INSERT INTO tlog_node (level, idx, hash) VALUES (0, 1, $1)`, [Buffer.alloc(32)]);
    await refused(web, `UPDATE tlog_sequencer SET size = size + 1`);
    await refused(
      web,
      `INSERT INTO tlog_checkpoint (size, root_hash, note, key_hash) VALUES (1, $1, 'n', 'ffffffff')`,
      [Buffer.alloc(32)],
    );
    await refused(web, `DELETE FROM tlog_checkpoint`);
    await refused(
      web,
      `INSERT INTO tlog_key (key_hash, origin, public_key, sealed_private_key, kek_id) VALUES ('aaaaaaaa', 'o', $1, '\\x00', 'k')`,
      [Buffer.alloc(32)],
    );
    await refused(web, `SELECT * FROM tlog_append('test', '\\x09'::bytea, 'k9')`);
    const size = await owner.db().$queryRawUnsafe<{ size: bigint }[]>(`SELECT size FROM tlog_sequencer`);
    expect(size[0]?.size).toBe(1n);
  });

  it("reads the log it serves, but not the log key's sealed private half", async () => {
    const e = await web.query(
      `SELECT e.body, n.hash FROM tlog_entry e JOIN tlog_node n ON n.level = 0 AND n.idx = e.idx`,
    );
    expect(e.rowCount).toBe(1);
    expect((await web.query(`SELECT size FROM tlog_checkpoint`)).rowCount).toBe(1);
    await web.query(`SELECT origin, public_key FROM tlog_key`);
    await refused(web, `SELECT sealed_private_key FROM tlog_key`);
  });

  it("cannot create tables, grant itself rights, re-run the grants or become the owner", async () => {
    await refused(web, `CREATE TABLE evil (x int)`);
    await refused(web, `CREATE TABLE pgboss.evil (x int)`);
    // Without the grant option PostgreSQL only warns ("no privileges were granted"): still refused after.
    await web.query(`GRANT INSERT, UPDATE ON tlog_entry TO kiln_web`);
    await refused(web, `UPDATE tlog_entry SET kind = 'x'`);
    await refused(web, `SELECT kiln_grant_app_roles()`);
    await refused(web, `SELECT * FROM _prisma_migrations`);
    const ownerRole = (await owner.db().$queryRawUnsafe<{ u: string }[]>(`SELECT current_user AS u`))[0]?.u ?? "";
    await refused(web, `SET ROLE ${web.escapeIdentifier(ownerRole)}`);
    await refused(web, `SET ROLE kiln_workers`);
  });
});

describe("the workers' database role", () => {
  it("appends to the log (its job) but cannot drop its triggers or change any table", async () => {
    const r = await workers.query<{ idx: string }>(`SELECT idx::text FROM tlog_append('test', '\\x05'::bytea, 'k5')`);
    expect(r.rows[0]?.idx).toBe("1");
    // The triggers still refuse a rewrite, and the workers cannot take them away.
    const rewrite = await workers.query(`UPDATE tlog_entry SET body = '\\x06'::bytea WHERE idx = 0`).then(
      () => null,
      (e: unknown) => e as { code?: string },
    );
    expect(rewrite?.code).toBe("P0001");
    await refused(workers, `DROP TRIGGER tlog_entry_append_only ON tlog_entry`);
    await refused(workers, `ALTER TABLE tlog_entry DISABLE TRIGGER tlog_entry_append_only`);
    await refused(workers, `ALTER TABLE job_run ADD COLUMN x int`);
    await refused(workers, `DROP TABLE org CASCADE`);
    await refused(workers, `TRUNCATE tlog_entry`);
    await refused(workers, `CREATE TABLE evil (x int)`);
    await refused(workers, `CREATE TABLE pgboss.evil (x int)`);
    await refused(workers, `ALTER TABLE pgboss.job DISABLE TRIGGER ALL`);
    await refused(workers, `SELECT kiln_grant_app_roles()`);
  });
});

describe("ordinary work under the roles", () => {
  it("both roles insert, update, read and delete ordinary rows", async () => {
    for (const c of [web, workers]) {
      const id = randomUUID();
      await c.query(`INSERT INTO org (id, slug) VALUES ($1, $2)`, [id, `o-${id.slice(0, 8)}`]);
      await c.query(`UPDATE org SET slug = $2 WHERE id = $1`, [id, `p-${id.slice(0, 8)}`]);
      expect((await c.query(`SELECT slug FROM org WHERE id = $1`, [id])).rows[0]?.slug).toBe(`p-${id.slice(0, 8)}`);
      await c.query(`DELETE FROM org WHERE id = $1`, [id]);
    }
  });

  it("pg-boss runs on its owner-made schema: the workers create queues and work jobs, web sends", async () => {
    const wk = new PgBoss({ connectionString: urls.workers, max: 2, supervise: false, schedule: false });
    const wb = new PgBoss({
      connectionString: urls.web,
      max: 2,
      supervise: false,
      schedule: false,
      migrate: false,
      createSchema: false,
    });
    await wk.start();
    await wb.start();
    try {
      await wk.createQueue("roles-test");
      const id = await wb.send("roles-test", { n: 1 });
      expect(id).toBeTruthy();
      const [job] = await wk.fetch<{ n: number }>("roles-test");
      expect(job?.data).toEqual({ n: 1 });
      if (job) await wk.complete("roles-test", job.id);
    } finally {
      await wb.stop({ graceful: false, close: true });
      await wk.stop({ graceful: false, close: true });
    }
  });
});
