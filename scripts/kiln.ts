// The `kiln` admin CLI: `npm run kiln -- <command>` against the running instance's database
// (DATABASE_URL, or the URL `npm run up` recorded in $KILN_DATA_DIR/instance.json). Commands live
// in one module per capability under scripts/kiln/ (registry.ts lists them); this file only parses
// argv, finds the command and maps errors to exit codes.
import { readFileSync } from "node:fs";
import path from "node:path";
import { type ParseArgsOptionsConfig, parseArgs } from "node:util";
import { createDb } from "@kiln/db";
import { isDomainError } from "@kiln/domain";
import { type CliCommand, type CliContext, type Db, UsageError } from "./kiln/command.ts";
import { commands } from "./kiln/registry.ts";

const USAGE = `usage: npm run kiln -- <command> [--json]\n${commands
  .map((c) => c.usage)
  .filter(Boolean)
  .map((u) => `  ${u}`)
  .join("\n")}`;

function databaseUrl(): string {
  if (process.env.DATABASE_URL) return process.env.DATABASE_URL;
  const dataDir = path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data");
  try {
    const info = JSON.parse(readFileSync(path.join(dataDir, "instance.json"), "utf8")) as { databaseUrl?: string };
    if (info.databaseUrl) return info.databaseUrl;
  } catch {
    // fall through to the error below
  }
  throw new Error(`no DATABASE_URL and no running instance found in ${dataDir} (start one with npm run up)`);
}

/** One parseArgs config from every command's options; a name declared twice must mean the same. */
function allOptions(): ParseArgsOptionsConfig {
  const merged: ParseArgsOptionsConfig = {
    json: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  };
  for (const c of commands) {
    for (const [name, o] of Object.entries(c.options ?? {})) {
      const seen = merged[name];
      if (seen && seen.type !== o.type) throw new Error(`CLI option --${name} is declared as two types`);
      merged[name] = seen ?? o;
    }
  }
  return merged;
}

function find(positionals: string[]): { command: CliCommand; args: string[] } | null {
  const [noun, verb, ...rest] = positionals;
  const two = commands.find((c) => c.name === `${noun} ${verb ?? ""}`);
  if (two) return { command: two, args: rest };
  const one = commands.find((c) => c.name === noun);
  return one ? { command: one, args: positionals.slice(1) } : null;
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({ allowPositionals: true, options: allOptions() });
  const found = find(positionals);
  if (values.help || !found) {
    (values.help ? console.log : console.error)(USAGE);
    return values.help ? 0 : 2;
  }
  let db: Db | null = null;
  const ctx: CliContext = {
    get db() {
      db ??= createDb({ url: databaseUrl(), max: 2 });
      return db;
    },
    values,
    args: found.args,
    out: (human, data) => console.log(values.json ? JSON.stringify(data) : human),
    actor: `cli:${process.env.USER ?? "unknown"}`,
  };
  try {
    return (await found.command.run(ctx)) ?? 0;
  } catch (e) {
    if (e instanceof UsageError) {
      if (values.json) console.log(JSON.stringify({ error: { code: "CLI.USAGE", message: e.message } }));
      console.error(`kiln: ${e.message}\nusage: npm run kiln -- ${found.command.usage}`);
      return 2;
    }
    // A refused clone URL names its rule too (details.reason, e.g. SOURCE.SCHEME_NOT_ALLOWED).
    const reason = isDomainError(e) && typeof e.details?.reason === "string" ? ` (${e.details.reason})` : "";
    const msg = isDomainError(e) ? `${e.code}${reason}: ${e.message}` : e instanceof Error ? e.message : String(e);
    if (values.json)
      console.log(JSON.stringify({ error: { code: isDomainError(e) ? e.code : "CLI.ERROR", message: msg } }));
    else console.error(`kiln: ${msg}`);
    return 1;
  } finally {
    // `db` is assigned inside the getter above; TypeScript's narrowing cannot see that.
    await (db as Db | null)?.$disconnect();
  }
}

process.exit(await main());
