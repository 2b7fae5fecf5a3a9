// `secret set|list|delete|envelope` and `secrets rotate-kek` (issue 16, docs/adr/0025). Values are
// read from stdin only (never argv, which other users of the host can read in /proc).
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import {
  deleteSecret,
  type KekSource,
  kekSourceFromEnv,
  listSecrets,
  readKekFile,
  rotateKek,
  secretEnvelope,
  setSecret,
  targetBySlug,
} from "@kiln/engine";
import { arg, type CliCommand, opt, UsageError } from "./command.ts";

/** KILN_SECRETS_KEK_FILE, or the file `npm run up` recorded for its instance. */
function kekFile(): string {
  if (process.env.KILN_SECRETS_KEK_FILE) return process.env.KILN_SECRETS_KEK_FILE;
  const dataDir = path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data");
  try {
    const info = JSON.parse(readFileSync(path.join(dataDir, "instance.json"), "utf8")) as { secretsKekFile?: string };
    if (info.secretsKekFile) return info.secretsKekFile;
  } catch {
    // fall through to the error below
  }
  throw new Error(`no KILN_SECRETS_KEK_FILE and no running instance's KEK found in ${dataDir}`);
}

/**
 * This shell's KEK source, built as the web app and the workers build theirs (kekSourceFromEnv):
 * the same file and the same KILN_SECRETS_KEK_ID, so a secret set here is delivered there.
 */
export function cliKekSource(): KekSource {
  return kekSourceFromEnv({ KILN_SECRETS_KEK_FILE: kekFile(), KILN_SECRETS_KEK_ID: process.env.KILN_SECRETS_KEK_ID });
}

export async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) process.stderr.write("secret value (end with Ctrl-D): ");
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  // One trailing newline is the shell's (`echo v | kiln secret set ...`), not the value's.
  return Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
}

/** Installs `source`'s contents at `target` atomically (same directory, mode 0600). */
function installKekFile(source: string, target: string): void {
  const tmp = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.tmp`);
  writeFileSync(tmp, readFileSync(source), { mode: 0o600, flag: "wx" });
  renameSync(tmp, target);
}

export const secretCommands: CliCommand[] = [
  {
    name: "secret set",
    usage: "secret set <org>[/<repo>] <NAME>   (value from stdin; a new version each time; audited)",
    async run(ctx) {
      const target = await targetBySlug(ctx.db, arg(ctx, 0, "org[/repo]"));
      const name = arg(ctx, 1, "NAME");
      const value = await readStdin();
      const r = await setSecret(ctx.db, cliKekSource(), { target, name, value, actor: ctx.actor });
      ctx.out(`${target.label} ${r.name}: version ${r.version}`, r);
      return 0;
    },
  },
  {
    name: "secret list",
    usage: "secret list <org>[/<repo>]   (names, versions, who changed them and when; never values)",
    async run(ctx) {
      const target = await targetBySlug(ctx.db, arg(ctx, 0, "org[/repo]"));
      const rows = await listSecrets(ctx.db, { orgId: target.orgId, scope: target.scope });
      ctx.out(
        rows.map((r) => `${r.scope}\t${r.name}\tv${r.version}\t${r.updated_by}\t${r.updated_at}`).join("\n") ||
          `(${target.label} has no secrets)`,
        rows,
      );
      return 0;
    },
  },
  {
    name: "secret delete",
    usage: "secret delete <org>[/<repo>] <NAME>   (audited)",
    async run(ctx) {
      const target = await targetBySlug(ctx.db, arg(ctx, 0, "org[/repo]"));
      const r = await deleteSecret(ctx.db, { target, name: arg(ctx, 1, "NAME"), actor: ctx.actor });
      ctx.out(`${target.label} ${r.name}: deleted (was version ${r.version})`, r);
      return 0;
    },
  },
  {
    name: "secret envelope",
    usage: `secret envelope <org>[/<repo>] <NAME> --json
    (for a backup check: {kek_id, wrapped_dek, dek_aad, ciphertext, aad}; no plaintext, no key needed)`,
    async run(ctx) {
      const target = await targetBySlug(ctx.db, arg(ctx, 0, "org[/repo]"));
      const e = await secretEnvelope(ctx.db, { target, name: arg(ctx, 1, "NAME") });
      ctx.out(JSON.stringify(e, null, 2), e);
      return 0;
    },
  },
  {
    name: "secrets rotate-kek",
    usage: `secrets rotate-kek --new-kek-file F
    (rewraps every org's data key under F's KEK in one transaction and disables the current KEK; then installs F
     at KILN_SECRETS_KEK_FILE here: copy it to that path on every other host, where processes pick it up unrestarted)`,
    options: { "new-kek-file": { type: "string" } },
    async run(ctx) {
      const file = opt(ctx.values, "new-kek-file");
      if (!file) throw new UsageError("secrets rotate-kek needs --new-kek-file F");
      const current = kekFile();
      const oldKek = cliKekSource().current();
      const newKek = readKekFile(file);
      const r = await rotateKek(ctx.db, { oldKek, newKek, actor: ctx.actor });
      if (path.resolve(file) !== path.resolve(current)) installKekFile(file, current);
      ctx.out(
        `rewrapped ${r.rewrapped} data key(s) under KEK ${r.new_kek_id}; KEK ${r.old_kek_id ?? "(none)"} is disabled.\n` +
          `installed at ${current}; install the same file there on every other web host`,
        { ...r, installed_at: current },
      );
      return 0;
    },
  },
];
