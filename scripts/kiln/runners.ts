// `pool create` and `runner ...` commands: org pools and the hosts an org owns (issue 22, docs/adr/0034).
import {
  applyRunnerAction,
  createOrgPool,
  createRegistrationToken,
  DEFAULT_ENGINE_CONFIG,
  listRunners,
  orgIdOf,
  type RunnerView,
} from "@kiln/engine";
import type { RunnerAction } from "@kiln/domain";
import { arg, type CliCommand, intOpt, opt, UsageError } from "./command.ts";

// Listing only: how long without a heartbeat an online host reads offline (the server's TTL may differ).
const LEASE_TTL_MS = DEFAULT_ENGINE_CONFIG.leaseTtlMs;

function describe(r: RunnerView): string {
  const slots = `${r.slots.inUse}/${r.slots.total} slots`;
  const why = r.quarantine ? `\t(${r.quarantine.kind}: ${r.quarantine.reason})` : "";
  return (
    [
      r.id,
      r.name,
      r.org ?? "(platform)",
      r.pool,
      r.state,
      r.isolation ?? "-",
      `labels=${r.labels.join(",") || "-"}`,
      slots,
      `heartbeat=${r.lastHeartbeatAt ?? "never"}`,
    ].join("\t") + why
  );
}

function actionCommand(action: Exclude<RunnerAction, "quarantine">, usage: string): CliCommand {
  return {
    name: `runner ${action}`,
    usage,
    async run(ctx) {
      const r = await applyRunnerAction(ctx.db, {
        orgId: null,
        runnerId: arg(ctx, 0, "runner-id"),
        action,
        actor: ctx.actor,
        leaseTtlMs: LEASE_TTL_MS,
      });
      ctx.out(describe(r), r);
      return 0;
    },
  };
}

export const runnerCommands: CliCommand[] = [
  {
    name: "pool create",
    usage: "pool create <org>/<name> --isolation process|microvm   (an org pool for the org's own hosts; audited)",
    options: { isolation: { type: "string" } },
    async run(ctx) {
      const full = arg(ctx, 0, "org>/<name");
      const [org, name, ...rest] = full.split("/");
      if (!org || !name || rest.length > 0) throw new UsageError("name the pool as <org>/<name>");
      const isolation = opt(ctx.values, "isolation");
      if (isolation !== "process" && isolation !== "microvm")
        throw new UsageError("--isolation must be process or microvm");
      const p = await createOrgPool(ctx.db, { orgId: await orgIdOf(ctx.db, org), name, isolation, actor: ctx.actor });
      ctx.out(`${p.name}\tmin isolation ${p.minIsolation}\towned by ${p.org}\tno untrusted runs`, p);
      return 0;
    },
  },
  {
    name: "runner token",
    usage: "runner token <org> --pool <pool> [--multi-use] [--expires-minutes 60]   (a registration token, shown once)",
    options: {
      pool: { type: "string" },
      "multi-use": { type: "boolean", default: false },
      "expires-minutes": { type: "string" },
    },
    async run(ctx) {
      const pool = opt(ctx.values, "pool");
      if (!pool) throw new UsageError("runner token needs --pool <pool>");
      const minutes = intOpt(ctx.values, "expires-minutes");
      const t = await createRegistrationToken(ctx.db, {
        orgId: await orgIdOf(ctx.db, arg(ctx, 0, "org")),
        pool,
        singleUse: ctx.values["multi-use"] !== true,
        ...(minutes !== undefined ? { expiresInMinutes: minutes } : {}),
        actor: ctx.actor,
      });
      ctx.out(
        `${t.token}\n(shown once; pool ${t.pool}; ${t.singleUse ? "single use" : "reusable"}; expires ${t.expiresAt})`,
        t,
      );
      return 0;
    },
  },
  {
    name: "runner list",
    usage: "runner list [<org>]   (every host, or one org's: state, labels, slots, last heartbeat)",
    async run(ctx) {
      const org = ctx.args[0];
      const rows = await listRunners(ctx.db, {
        orgId: org ? await orgIdOf(ctx.db, org) : null,
        leaseTtlMs: LEASE_TTL_MS,
      });
      ctx.out(rows.map(describe).join("\n") || "(no runners)", rows);
      return 0;
    },
  },
  actionCommand(
    "revoke",
    "runner revoke <runner-id>   (credential dead; running jobs fenced within one lease, retried elsewhere)",
  ),
  actionCommand("drain", "runner drain <runner-id>   (finishes its current jobs, claims nothing new)"),
  actionCommand("undrain", "runner undrain <runner-id>"),
  {
    name: "runner quarantine",
    usage: "runner quarantine <runner-id> --reason <text>   (claims refused until unquarantined)",
    options: { reason: { type: "string" } },
    async run(ctx) {
      const reason = opt(ctx.values, "reason");
      if (!reason) throw new UsageError("runner quarantine needs --reason");
      const r = await applyRunnerAction(ctx.db, {
        orgId: null,
        runnerId: arg(ctx, 0, "runner-id"),
        action: "quarantine",
        reason,
        actor: ctx.actor,
        leaseTtlMs: LEASE_TTL_MS,
      });
      ctx.out(describe(r), r);
      return 0;
    },
  },
  actionCommand("unquarantine", "runner unquarantine <runner-id>   (an admin lifts a quarantine, manual or automatic)"),
];
