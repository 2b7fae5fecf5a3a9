// Login roles for the platform's processes (issue 28): the web server and the workers connect as
// members of migration 0029's group roles, never as the owner, so neither can drop the log's
// triggers or alter a table. Only the harness's own clusters (the embedded PostgreSQL, the test
// server) get these: an operator's database is configured by the operator (docs/adr/0026 "Amended (issue 28): database roles").
import { createHash } from "node:crypto";
import { APP_ROLES, type AppRole } from "@kiln/db";
import pg from "pg";

export interface AppRoleUrls {
  web: string;
  workers: string;
}

/** `kiln_web_login`, `kiln_workers_login`: the login members of the group roles. */
export function loginRoleName(role: AppRole): string {
  return `${APP_ROLES[role]}_login`;
}

/**
 * Creates the login roles if missing (cluster-wide, so several platforms on one test server share
 * them) and returns the URLs web and workers connect with; null when the owner may not create roles
 * or the group roles do not exist (the caller then keeps the owner's URL, as before issue 28).
 * The password is derived from the owner's, so that every harness on the cluster computes the same
 * one without storing it and without racing an ALTER ROLE against another harness.
 */
export async function ensureAppLoginRoles(ownerUrl: string): Promise<AppRoleUrls | null> {
  const client = new pg.Client({ connectionString: ownerUrl });
  await client.connect();
  try {
    const r = await client.query<{ may: boolean; groups: number }>(
      `SELECT (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) AS may,
              (SELECT count(*)::int FROM pg_roles WHERE rolname = ANY($1)) AS groups`,
      [Object.values(APP_ROLES)],
    );
    const row = r.rows[0];
    if (!row?.may || row.groups !== 2) return null;
    const owner = new URL(ownerUrl);
    const urls: Partial<AppRoleUrls> = {};
    for (const role of ["web", "workers"] as const) {
      const login = loginRoleName(role);
      const password = loginPassword(owner, login);
      const exists = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [login]);
      if (exists.rowCount === 0) {
        await client
          .query(
            `CREATE ROLE ${client.escapeIdentifier(login)} LOGIN PASSWORD ${client.escapeLiteral(password)} IN ROLE ${client.escapeIdentifier(APP_ROLES[role])}`,
          )
          .catch((err: unknown) => {
            // Another harness on this cluster created it meanwhile (same name, same password).
            if (!isDuplicateRole(err)) throw err;
          });
      }
      const u = new URL(ownerUrl);
      u.username = login;
      u.password = password;
      urls[role] = u.toString();
    }
    return urls as AppRoleUrls;
  } finally {
    await client.end();
  }
}

function loginPassword(owner: URL, login: string): string {
  return createHash("sha256")
    .update(`kiln-app-login\0${decodeURIComponent(owner.password)}\0${login}`)
    .digest("base64url");
}

function isDuplicateRole(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === "42710" || code === "23505";
}
