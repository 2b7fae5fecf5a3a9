export { createDb, sqlPool, type Db, type Tx, type DbOrTx, type DbOptions } from "./client.ts";
export { withTx, type Isolation, type TxOptions } from "./transaction.ts";
export type { SqlPool, SqlClient, SqlQuery, SqlResult } from "./sql-client.ts";
export { migrateDatabase, ensureDatabase } from "./migrate.ts";
export { Prisma } from "./generated/prisma/client.ts";
export { grantAppRoles, APP_ROLES, type AppRole } from "./app-roles.ts";
