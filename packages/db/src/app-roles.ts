import pg from "pg";

/**
 * The database roles the apps run as (issue 28, docs/adr/0026 "Amended (issue 28): database roles"):
 * group roles with data rights only, created by migration 0029. The web role reads the
 * transparency log's tables and writes none of them.
 */
export const APP_ROLES = { web: "kiln_web", workers: "kiln_workers" } as const;
export type AppRole = keyof typeof APP_ROLES;

/**
 * Re-applies the roles' grants as the owner (`url`): after pg-boss has created or migrated its
 * schema, whose tables the migration could not see, and after an operator created the roles by hand.
 * Idempotent. A no-op (with a notice) while the roles do not exist.
 */
export async function grantAppRoles(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(`SELECT "kiln_grant_app_roles"()`);
  } finally {
    await client.end();
  }
}
