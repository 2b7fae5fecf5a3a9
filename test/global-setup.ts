import { grantAppRoles, migrateDatabase } from "@kiln/db";
import { createTemplate, databaseUrl, startTestPostgres, type TestPostgres } from "@kiln/testkit";
import { PgBoss } from "pg-boss";
import type { TestProject } from "vitest/node";

export const TEMPLATE = "kiln_template";
let server: TestPostgres | null = null;

/** Starts PostgreSQL once and builds the template every test file clones: real migrations + pg-boss schema. */
export async function setup(project: TestProject): Promise<void> {
  server = await startTestPostgres();
  await createTemplate(server.url, TEMPLATE, async (url) => {
    await migrateDatabase(url);
    const boss = new PgBoss({ connectionString: url, max: 2 });
    await boss.start();
    await boss.stop({ graceful: false, close: true });
    // pg-boss's tables did not exist when migration 0029 granted the app roles their rights.
    await grantAppRoles(url);
  });
  project.provide("pgServerUrl", server.url);
  project.provide("pgTemplate", TEMPLATE);
  void databaseUrl;
}

export async function teardown(): Promise<void> {
  await server?.stop();
}
