import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { afterAll, beforeAll, inject } from "vitest";
import { createDb, type Db } from "../src/client.ts";

/** A database cloned for this file from the template the global setup migrated (conventions 13). */
export function useMigratedDb(max = 4): { db: () => Db; url: () => string } {
  let db: Db | null = null;
  let url = "";
  const name = uniqueDatabaseName("db");
  beforeAll(async () => {
    url = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), name);
    db = createDb({ url, max });
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
}
