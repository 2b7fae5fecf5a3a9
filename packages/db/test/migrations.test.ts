// prisma/migrations and prisma/schema.prisma tell one story (docs/adr/0039): names unique by number
// and ordered, and a fresh database migrated from them has exactly the schema's tables and columns
// (types and nullability) but for the listed known drift. Each check is also shown failing on a deliberately divergent copy.
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureDatabase, migrateDatabase } from "../src/migrate.ts";
import { dropFreshDatabase, freshDatabase } from "./support.ts";
import {
  databaseShapes,
  KNOWN_DRIFT,
  migrationNameProblems,
  migrationNames,
  schemaShapes,
  shapeMismatches,
  type TableShapes,
} from "./schema-drift.ts";

const prismaDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../prisma");
const migrationsDir = path.join(prismaDir, "migrations");
const created: string[] = [];
let tmp = "";

/** A fresh database on the suite's embedded PostgreSQL with every migration in `dir` applied. */
async function migratedShapes(dir: string): Promise<TableShapes> {
  const { name, url } = freshDatabase("drift");
  created.push(name);
  await ensureDatabase(url);
  await migrateDatabase(url, () => {}, dir);
  return databaseShapes(url);
}

let migrated: TableShapes;
beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-drift-"));
  migrated = await migratedShapes(migrationsDir);
});
afterAll(async () => {
  for (const name of created) await dropFreshDatabase(name);
  await rm(tmp, { recursive: true, force: true });
});

describe("migration names", () => {
  it("are unique by number and ordered, except the grandfathered collisions", async () => {
    expect(migrationNameProblems(await migrationNames(migrationsDir))).toEqual([]);
  });

  it("a new collision, a bad name, or a grandfathered pair that changed is reported", () => {
    const names = ["0001_init", "0014_id_tokens", "0014_secrets", "0015_attestations", "0015_tlog"];
    const grandfathered = { "0014": ["0014_id_tokens", "0014_secrets"], "0015": ["0015_attestations", "0015_tlog"] };
    expect(migrationNameProblems(names, grandfathered)).toEqual([]);
    expect(migrationNameProblems([...names, "0015_more"].sort(), grandfathered)).toEqual([
      "number 0015 is used by 0015_attestations, 0015_more, 0015_tlog: give the newer migration the next free number",
      "grandfathered collision 0015 (0015_attestations, 0015_tlog) no longer matches the directory",
    ]);
    expect(migrationNameProblems(["0001_init", "0002_init", "0002_again", "3_x"], {})).toEqual([
      "3_x: not NNNN_snake_case",
      "migrations are not listed in name order",
      "number 0002 is used by 0002_init, 0002_again: give the newer migration the next free number",
    ]);
  });
});

describe("migrations and schema.prisma", () => {
  it("a database migrated from scratch has exactly the schema's tables, columns, types and nullability", async () => {
    const schema = schemaShapes(await readFile(path.join(prismaDir, "schema.prisma"), "utf8"));
    expect(schema.size).toBeGreaterThan(50);
    expect(shapeMismatches(schema, migrated)).toEqual(KNOWN_DRIFT);
  });

  it("a divergent schema copy is reported by table and column", async () => {
    const source = await readFile(path.join(prismaDir, "schema.prisma"), "utf8");
    const divergent = source
      // api_token's revoked_at (the first model with it), made required; and a model with no table.
      .replace('revokedAt  DateTime? @map("revoked_at")', 'revokedAt  DateTime @map("revoked_at")')
      .concat('\nmodel DriftProbe {\n  id String @id @db.Uuid\n  @@map("drift_probe")\n}\n');
    expect(divergent).not.toBe(source);
    const copy = path.join(tmp, "schema.prisma");
    await writeFile(copy, divergent);
    const mismatches = shapeMismatches(schemaShapes(await readFile(copy, "utf8")), migrated);
    expect(mismatches).toContain("drift_probe: in schema.prisma, no such table after the migrations");
    expect(mismatches).toContain("api_token.revoked_at: nullable in the database, NOT NULL in schema.prisma");
  });

  it("a divergent migrations copy (a column the schema lacks) is reported", async () => {
    const copy = path.join(tmp, "migrations");
    await cp(migrationsDir, copy, { recursive: true });
    await mkdir(path.join(copy, "9999_drift_probe"));
    await writeFile(
      path.join(copy, "9999_drift_probe", "migration.sql"),
      "ALTER TABLE org ADD COLUMN drift_probe int;\n",
    );
    const schema = schemaShapes(await readFile(path.join(prismaDir, "schema.prisma"), "utf8"));
    expect(shapeMismatches(schema, await migratedShapes(copy))).toEqual(
      [...KNOWN_DRIFT, "org.drift_probe: in the database, not in schema.prisma"].sort(),
    );
  });
});
