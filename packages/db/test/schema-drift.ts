// The two checks that keep prisma/migrations and prisma/schema.prisma one story (docs/adr/0039):
// migration names unique by number and ordered, and the migrated database's tables and columns
// equal to the schema's datamodel. `prisma migrate diff` would do the second, but it needs the
// schema engine, which Prisma downloads at run time and this network refuses (docs/adr/0002); the
// schema is parsed with Prisma's own parser instead (its wasm build), never a hand-written copy.
import { readdir } from "node:fs/promises";
import { get_dmmf } from "@prisma/prisma-schema-wasm";
import pg from "pg";

// Applied before this check existed, and recorded by name in `_prisma_migrations` on every running
// database: renaming one would make the runner apply it a second time (packages/db/src/migrate.ts).
// Each pair applies in name order, which is the order it was written in. No new entry belongs here.
const GRANDFATHERED_NUMBER_COLLISIONS: Readonly<Record<string, readonly string[]>> = {
  "0014": ["0014_id_tokens", "0014_secrets"],
  "0015": ["0015_attestations", "0015_tlog"],
  "0016": ["0016_console", "0016_forge"],
  "0017": ["0017_matrix_reruns", "0017_schedules_runners"],
};

// Drift the schema cannot be edited to remove, each with why. Empty since 0035 made job_run.needs
// NOT NULL (0001_init created it nullable; Prisma has no nullable list). The check fails when an
// entry here stops being true, so it is removed then.
export const KNOWN_DRIFT: readonly string[] = [];

const NAME = /^(\d{4})_[a-z0-9]+(?:_[a-z0-9]+)*$/;

/** Every problem with these migration directory names; [] when they are unique by number and ordered. */
export function migrationNameProblems(
  names: readonly string[],
  grandfathered: Readonly<Record<string, readonly string[]>> = GRANDFATHERED_NUMBER_COLLISIONS,
): string[] {
  const problems: string[] = [];
  const byNumber = new Map<string, string[]>();
  for (const name of names) {
    const m = NAME.exec(name);
    if (!m?.[1]) {
      problems.push(`${name}: not NNNN_snake_case`);
      continue;
    }
    byNumber.set(m[1], [...(byNumber.get(m[1]) ?? []), name]);
  }
  // The runner applies in sorted name order: a list not already sorted would apply differently
  // from how it reads.
  const sorted = [...names].sort();
  if (sorted.join("\n") !== names.join("\n")) problems.push("migrations are not listed in name order");
  for (const [num, list] of byNumber) {
    const allowed = grandfathered[num];
    if (list.length > 1 && !sameSet(list, allowed ?? []))
      problems.push(`number ${num} is used by ${list.join(", ")}: give the newer migration the next free number`);
  }
  for (const [num, list] of Object.entries(grandfathered)) {
    if (!sameSet(byNumber.get(num) ?? [], list))
      problems.push(`grandfathered collision ${num} (${list.join(", ")}) no longer matches the directory`);
  }
  return problems;
}

const sameSet = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().join() === [...b].sort().join();

export async function migrationNames(dir: string): Promise<string[]> {
  return (await readdir(dir, { withFileTypes: true }))
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
}

/** One column as both sides describe it: PostgreSQL's udt name ("_text" for text[]) and nullability. */
interface ColumnShape {
  type: string;
  nullable: boolean;
}
export type TableShapes = Map<string, Map<string, ColumnShape>>;

interface DmmfField {
  name: string;
  dbName?: string | null;
  kind: string;
  type: string;
  isList: boolean;
  isRequired: boolean;
  nativeType?: [string, string[]] | null;
}
interface DmmfModel {
  name: string;
  dbName?: string | null;
  fields: DmmfField[];
}

// Prisma's native type attribute (@db.X) -> PostgreSQL's udt_name.
const NATIVE: Record<string, string> = {
  Uuid: "uuid",
  Text: "text",
  VarChar: "varchar",
  Char: "bpchar",
  SmallInt: "int2",
  Integer: "int4",
  BigInt: "int8",
  Real: "float4",
  DoublePrecision: "float8",
  Decimal: "numeric",
  Money: "money",
  Boolean: "bool",
  ByteA: "bytea",
  Json: "json",
  JsonB: "jsonb",
  Date: "date",
  Time: "time",
  Timetz: "timetz",
  Timestamp: "timestamp",
  Timestamptz: "timestamptz",
  Inet: "inet",
  Citext: "citext",
  Oid: "oid",
  Xml: "xml",
  Bit: "bit",
  VarBit: "varbit",
};
// The column type Prisma gives a scalar without @db.X on PostgreSQL.
const DEFAULT: Record<string, string> = {
  String: "text",
  Int: "int4",
  BigInt: "int8",
  Float: "float8",
  Decimal: "numeric",
  Boolean: "bool",
  DateTime: "timestamp",
  Json: "jsonb",
  Bytes: "bytea",
};

/** The tables and columns a schema.prisma source declares, read by Prisma's own parser. */
export function schemaShapes(schemaSource: string): TableShapes {
  const dmmf = JSON.parse(get_dmmf(JSON.stringify({ prismaSchema: [["schema.prisma", schemaSource]] }))) as {
    datamodel: { models: DmmfModel[]; enums: { name: string; dbName?: string | null }[] };
  };
  const enums = new Map(dmmf.datamodel.enums.map((e) => [e.name, e.dbName ?? e.name]));
  const tables: TableShapes = new Map();
  for (const model of dmmf.datamodel.models) {
    const columns = new Map<string, ColumnShape>();
    for (const f of model.fields) {
      if (f.kind === "object") continue; // a relation, not a column
      const base =
        f.kind === "enum"
          ? (enums.get(f.type) ?? f.type)
          : f.nativeType
            ? (NATIVE[f.nativeType[0]] ?? f.nativeType[0].toLowerCase())
            : (DEFAULT[f.type] ?? f.type);
      // A list field is always required in Prisma (typed `T[]`, never null), so its column must be NOT
      // NULL too: a NULL array would break the generated type's promise.
      columns.set(f.dbName ?? f.name, { type: f.isList ? `_${base}` : base, nullable: !f.isRequired });
    }
    tables.set(model.dbName ?? model.name, columns);
  }
  return tables;
}

/** The base tables and columns of a database's public schema, except the migration runner's own. */
export async function databaseShapes(url: string): Promise<TableShapes> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{
      table_name: string;
      column_name: string;
      udt_name: string;
      is_nullable: string;
    }>(
      `SELECT c.table_name, c.column_name, c.udt_name, c.is_nullable
         FROM information_schema.columns c
         JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
        WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE' AND c.table_name <> '_prisma_migrations'`,
    );
    const tables: TableShapes = new Map();
    for (const r of rows) {
      const columns = tables.get(r.table_name) ?? new Map<string, ColumnShape>();
      columns.set(r.column_name, { type: r.udt_name, nullable: r.is_nullable === "YES" });
      tables.set(r.table_name, columns);
    }
    return tables;
  } finally {
    await client.end();
  }
}

/** Every difference, one line per table or column, sorted; [] when the two agree. */
export function shapeMismatches(schema: TableShapes, database: TableShapes): string[] {
  const out: string[] = [];
  for (const [table, cols] of schema) {
    const db = database.get(table);
    if (!db) {
      out.push(`${table}: in schema.prisma, no such table after the migrations`);
      continue;
    }
    for (const [col, want] of cols) {
      const have = db.get(col);
      if (!have) out.push(`${table}.${col}: in schema.prisma, no such column after the migrations`);
      else {
        if (have.type !== want.type)
          out.push(`${table}.${col}: type ${have.type} in the database, ${want.type} in schema.prisma`);
        if (have.nullable !== want.nullable)
          out.push(`${table}.${col}: ${nullability(have)} in the database, ${nullability(want)} in schema.prisma`);
      }
    }
    for (const col of db.keys()) if (!cols.has(col)) out.push(`${table}.${col}: in the database, not in schema.prisma`);
  }
  for (const table of database.keys())
    if (!schema.has(table)) out.push(`${table}: a table in the database, no model in schema.prisma`);
  return out.sort();
}

const nullability = (c: ColumnShape) => (c.nullable ? "nullable" : "NOT NULL");
