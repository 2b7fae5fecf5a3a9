// Forge credentials and delivery state per repo (issue 19, docs/forge.md): a per-repo token (sealed
// with KILN_SECRETS_KEY, never printed), the webhook's hook id, and what the forge loop last did.
import { readFileSync } from "node:fs";
import path from "node:path";
import {
  engineEnvSchema,
  findRepoByName,
  forgeConfigFromEnv,
  getRepoForge,
  setRepoForge,
  type ForgeConfig,
} from "@kiln/engine";
import { arg, type CliCommand, type CliContext, intOpt, opt, UsageError } from "./command.ts";

/** The same variables the workers read (KILN_SECRETS_KEY, KILN_GITHUB_*, KILN_PUBLIC_URL); without
 * KILN_SECRETS_KEY, the key `npm run up` generated for its instance (recorded in instance.json). */
function forgeConfig(): ForgeConfig {
  const env = engineEnvSchema.parse(process.env);
  return forgeConfigFromEnv({ ...env, KILN_SECRETS_KEY: env.KILN_SECRETS_KEY ?? instanceForgeKey() }, (p) =>
    readFileSync(p, "utf8"),
  );
}

function instanceForgeKey(): string | undefined {
  const dataDir = path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data");
  try {
    const info = JSON.parse(readFileSync(path.join(dataDir, "instance.json"), "utf8")) as {
      forgeSecretsKeyFile?: string;
    };
    return info.forgeSecretsKeyFile ? readFileSync(info.forgeSecretsKeyFile, "utf8").trim() : undefined;
  } catch {
    // No running instance here: forge tokens then need KILN_SECRETS_KEY, and the command says so.
    return undefined;
  }
}

export const FORGE_OPTIONS = {
  "forge-token-file": { type: "string" },
  "forge-hook-id": { type: "string" },
  "clear-forge-token": { type: "boolean", default: false },
} as const;

/** `--forge-token-file F` / `--forge-hook-id N` / `--clear-forge-token`, for repo add and repo forge-set. */
export async function applyForgeFlags(ctx: CliContext, repoId: string): Promise<boolean> {
  const file = opt(ctx.values, "forge-token-file");
  const hookId = intOpt(ctx.values, "forge-hook-id");
  const clear = ctx.values["clear-forge-token"] === true;
  if (file && clear) throw new UsageError("--forge-token-file and --clear-forge-token exclude each other");
  if (!file && hookId === undefined && !clear) return false;
  // From a file, not argv: a token on the command line lands in shell history and `ps`.
  const token = file ? readFileSync(file, "utf8") : clear ? null : undefined;
  await setRepoForge(ctx.db, forgeConfig(), {
    repoId,
    actor: ctx.actor,
    ...(token !== undefined ? { token } : {}),
    ...(hookId !== undefined ? { hookId } : {}),
  });
  return true;
}

async function show(ctx: CliContext, fullName: string): Promise<void> {
  const repo = await findRepoByName(ctx.db, fullName);
  const v = await getRepoForge(ctx.db, forgeConfig(), { orgId: repo.orgId, repoId: repo.id });
  const lines = [
    `${v.full_name}`,
    `  credential      ${v.credential}${v.credential_problem ? ` (${v.credential_problem})` : ""}`,
    `  token stored    ${v.token_stored ? "yes (sealed)" : "no"}`,
    `  app install     ${v.app_installation_id ?? "-"}`,
    `  hook id         ${v.hook_id ?? "- (found by URL on the next reconcile)"}`,
    `  webhook url     ${v.webhook_url ?? "- (KILN_PUBLIC_URL unset)"}`,
    `  rate limited    ${v.rate_limited_until ?? "no"}`,
    `  last delivery   ${v.last_delivery ? `${v.last_delivery.received_at} ${v.last_delivery.event} ${v.last_delivery.outcome} ${v.last_delivery.delivery_id}` : "-"}`,
    `  reconciler      ${v.reconciler ? `${v.reconciler.last_checked_at ?? "-"}${v.reconciler.last_error ? ` error: ${v.reconciler.last_error}` : " ok"} (${v.reconciler.redeliveries_requested} redeliveries asked)` : "not run yet"}`,
    `  undelivered     ${v.undelivered_statuses} status(es)`,
  ];
  ctx.out(lines.join("\n"), v);
}

export const forgeCommands: CliCommand[] = [
  {
    name: "repo forge",
    usage: "repo forge <org>/<name>     (forge credential state, last delivery, reconciler, undelivered statuses)",
    async run(ctx) {
      await show(ctx, arg(ctx, 0, "org>/<name"));
      return 0;
    },
  },
  {
    name: "repo forge-set",
    usage: `repo forge-set <org>/<name> [--forge-token-file F] [--forge-hook-id N] [--clear-forge-token]
    (the token is read from F and stored sealed with KILN_SECRETS_KEY; also accepted by repo add)`,
    options: FORGE_OPTIONS,
    async run(ctx) {
      const name = arg(ctx, 0, "org>/<name");
      const repo = await findRepoByName(ctx.db, name);
      if (!(await applyForgeFlags(ctx, repo.id)))
        throw new UsageError("repo forge-set needs --forge-token-file, --forge-hook-id or --clear-forge-token");
      await show(ctx, name);
      return 0;
    },
  },
];
