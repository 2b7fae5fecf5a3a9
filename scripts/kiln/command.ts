// The shape every `npm run kiln -- <noun> <verb>` command has. One module per capability under
// scripts/kiln/ exports its commands; scripts/kiln.ts only parses argv and dispatches, so issues
// that add commands in parallel touch their own module and one line of the registry.
import type { ParseArgsOptionsConfig } from "node:util";
import type { createDb } from "@kiln/db";

export type Db = ReturnType<typeof createDb>;
export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>;

export interface CliContext {
  /** The instance's database, opened on first use (offline commands never open it). */
  readonly db: Db;
  readonly values: OptionValues;
  /** Positionals after the command's name, e.g. `egress allow <org> <pattern>` gives [org, pattern]. */
  readonly args: string[];
  /** Prints `human`, or `data` as one JSON line under --json. */
  out(human: string, data: unknown): void;
  /** Who the audit trail names for changes made from this shell. */
  readonly actor: string;
}

export interface CliCommand {
  /** "noun verb" (or just "noun"), matched against the first positionals. */
  name: string;
  /** Usage lines for this command, indented continuation lines allowed. */
  usage: string;
  /** Options this command reads; merged into one parseArgs config (same name must mean the same). */
  options?: ParseArgsOptionsConfig;
  /** True when the command never needs the database (e.g. offline verification). */
  offline?: boolean;
  /** Exit code; undefined means 0. Throw UsageError for missing or malformed arguments. */
  run(ctx: CliContext): Promise<number | undefined>;
}

/** Wrong arguments for a known command: the dispatcher prints that command's usage and exits 2. */
export class UsageError extends Error {}

/** A string option's value, or undefined. */
export function opt(values: OptionValues, key: string): string | undefined {
  const v = values[key];
  return typeof v === "string" ? v : undefined;
}

/** A required positional, or a UsageError naming it. */
export function arg(ctx: CliContext, index: number, name: string): string {
  const v = ctx.args[index];
  if (!v) throw new UsageError(`missing <${name}>`);
  return v;
}

/** A non-negative whole number option, or a UsageError naming it. */
export function intOpt(values: OptionValues, key: string): number | undefined {
  const v = opt(values, key);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${key} must be a non-negative integer`);
  return Number(v);
}
