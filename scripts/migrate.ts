// The deployment's migrations step (deploy/kubernetes/base/migrations-job.yaml, docs/adr/0046): what
// `npm run up` does before it starts the platform, as the database owner named by DATABASE_URL.
// prisma/migrations in order (the project's `migrate deploy`, ADR 0002), pg-boss's schema, then the
// app roles' grants over both. Each step is idempotent; the migration runner holds an advisory lock.
import { grantAppRoles, migrateDatabase } from "@kiln/db";
import { PgBoss } from "pg-boss";

const url = process.env.DATABASE_URL;
if (!url) {
  console.error("kiln migrate: DATABASE_URL (the database owner's) is required");
  process.exit(2);
}
const applied = await migrateDatabase(url, (m) => console.log(m));
// web and workers may then start in any order: neither has to create pg-boss's tables.
const boss = new PgBoss({ connectionString: url, max: 2 });
await boss.start();
await boss.stop({ graceful: false, close: true });
// pg-boss's tables did not exist when the migrations granted kiln_web/kiln_workers their rights.
await grantAppRoles(url);
console.log(JSON.stringify({ migrated: true, applied }));
