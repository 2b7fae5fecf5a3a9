export { createDb, sqlPool, type Db, type Tx, type DbOrTx, type DbOptions } from "./client.ts";
export { withTx, type Isolation } from "./transaction.ts";
export { migrateDatabase, ensureDatabase } from "./migrate.ts";
export { Prisma } from "./generated/prisma/client.ts";
import "./enums-check.ts";
