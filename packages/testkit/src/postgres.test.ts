// End-to-end check of the template/clone harness against a real embedded PostgreSQL: clones
// must start with the migrated schema and be fully isolated from each other.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  cloneDatabase,
  createTemplate,
  dropDatabase,
  startTestPostgres,
  uniqueDatabaseName,
  type TestPostgres,
} from "./postgres.ts";

let server: TestPostgres;
const savedUrl = process.env.KILN_TEST_DATABASE_URL;

beforeAll(async () => {
  delete process.env.KILN_TEST_DATABASE_URL; // this test is about the embedded path
  const t0 = performance.now();
  server = await startTestPostgres();
  console.info(`embedded postgres started in ${Math.round(performance.now() - t0)} ms`);
}, 60_000);

afterAll(async () => {
  await server?.stop();
  if (savedUrl !== undefined) process.env.KILN_TEST_DATABASE_URL = savedUrl;
}, 30_000);

async function query<R extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<R[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<R>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

describe("postgres template harness", () => {
  it("clones a migrated template into isolated databases", async () => {
    expect(server.embedded).toBe(true);
    expect(server.url).toMatch(/^postgresql:\/\/postgres:postgres@127\.0\.0\.1:\d+\/postgres$/);

    const template = uniqueDatabaseName("tmpl");
    let t0 = performance.now();
    await createTemplate(server.url, template, async (url) => {
      await query(url, "CREATE TABLE widgets (id serial PRIMARY KEY, name text NOT NULL)");
      await query(url, "INSERT INTO widgets (name) VALUES ('seed')");
    });
    console.info(`createTemplate took ${Math.round(performance.now() - t0)} ms`);

    const a = uniqueDatabaseName("a");
    const b = uniqueDatabaseName("b");
    t0 = performance.now();
    const urlA = await cloneDatabase(server.url, template, a);
    console.info(`cloneDatabase took ${Math.round(performance.now() - t0)} ms`);
    const urlB = await cloneDatabase(server.url, template, b);
    expect(urlA).toContain(`/${a}`);

    await query(urlA, "INSERT INTO widgets (name) VALUES ($1)", ["only-in-a"]);
    const namesA = (await query<{ name: string }>(urlA, "SELECT name FROM widgets ORDER BY id")).map((r) => r.name);
    const namesB = (await query<{ name: string }>(urlB, "SELECT name FROM widgets ORDER BY id")).map((r) => r.name);
    expect(namesA).toEqual(["seed", "only-in-a"]);
    expect(namesB).toEqual(["seed"]);

    // Re-creating the template while clones exist is fine (clones are independent copies).
    await createTemplate(server.url, template, async (url) => {
      await query(url, "CREATE TABLE gadgets (id int)");
    });

    // Drop while a session is still open: WITH (FORCE) must disconnect it.
    const lingering = new pg.Client({ connectionString: urlB });
    lingering.on("error", () => {});
    await lingering.connect();
    for (const name of [a, b, template]) await dropDatabase(server.url, name);
    await lingering.end().catch(() => {});

    const left = await query<{ datname: string }>(
      server.url,
      "SELECT datname FROM pg_database WHERE datname = ANY($1)",
      [[a, b, template]],
    );
    expect(left).toEqual([]);
    await dropDatabase(server.url, a); // idempotent
  }, 15_000);
});
