// `entitlement` and `pool` commands: who may use which capacity, and how isolated it is (docs/adr/0022).
import {
  type InterruptibleView,
  listEntitlements,
  listPools,
  type PoolView,
  setEntitlement,
  setPoolInterruptible,
  setPoolPolicy,
} from "@kiln/engine";
import { arg, type CliCommand, intOpt, opt, type OptionValues, UsageError } from "./command.ts";

export const capacityCommands: CliCommand[] = [
  {
    name: "entitlement set",
    usage: "entitlement set <org> --pool <pool> --slots <n> --weight <w> [--cap <n>]   (platform operators; audited)",
    options: {
      pool: { type: "string" },
      slots: { type: "string" },
      weight: { type: "string" },
      cap: { type: "string" },
    },
    async run(ctx) {
      const slots = intOpt(ctx.values, "slots");
      const weight = intOpt(ctx.values, "weight");
      if (slots === undefined || weight === undefined)
        throw new UsageError("entitlement set needs --slots and --weight");
      const r = await setEntitlement(ctx.db, {
        orgSlug: arg(ctx, 0, "org"),
        pool: opt(ctx.values, "pool") ?? "default",
        slots,
        weight,
        hardCap: intOpt(ctx.values, "cap") ?? null,
        actor: ctx.actor,
      });
      ctx.out(
        `${r.org} in pool ${r.pool}: ${r.slots} slots, weight ${r.weight}, cap ${r.hard_cap ?? "none"} (running ${r.running})`,
        r,
      );
      return 0;
    },
  },
  {
    name: "entitlement list",
    usage: "entitlement list [<org>]",
    async run(ctx) {
      const rows = await listEntitlements(ctx.db, ctx.args[0]);
      ctx.out(
        rows
          .map(
            (r) =>
              `${r.org}\t${r.pool}\tslots=${r.slots}\tweight=${r.weight}\tcap=${r.hard_cap ?? "-"}\trunning=${r.running}`,
          )
          .join("\n") || "(no entitlements)",
        rows,
      );
      return 0;
    },
  },
  {
    name: "pool set",
    usage: `pool set <name> --isolation microvm|process [--org <org>] [--development] [--no-untrusted] [--untrusted-on-process]
    (the minimum isolation class of its hosts; --org: one org owns it; --development: one operator's own pool,
     whose process hosts may serve several orgs; untrusted runs need microVMs unless an owned pool says otherwise)
  pool set <name> --interruptible --serves <pool> | --no-interruptible
    (interruptible capacity, docs/adr/0035: its hosts take background-tier jobs of <pool>'s queue only; audited)`,
    options: {
      isolation: { type: "string" },
      org: { type: "string" },
      development: { type: "boolean", default: false },
      "no-untrusted": { type: "boolean", default: false },
      "untrusted-on-process": { type: "boolean", default: false },
      interruptible: { type: "boolean", default: false },
      "no-interruptible": { type: "boolean", default: false },
      serves: { type: "string" },
    },
    async run(ctx) {
      const isolation = opt(ctx.values, "isolation");
      const flag = interruptibleFlag(ctx.values);
      // The interruptible flag alone leaves the pool's isolation policy as it is.
      if (flag !== null && isolation === undefined) {
        const r = await setPoolInterruptible(ctx.db, {
          pool: arg(ctx, 0, "name"),
          ...flag,
          actor: ctx.actor,
          orgId: null,
        });
        ctx.out(describeInterruptible(r), r);
        return 0;
      }
      if (isolation !== "microvm" && isolation !== "process")
        throw new UsageError("--isolation must be microvm or process");
      const r = await setPoolPolicy(ctx.db, {
        name: arg(ctx, 0, "name"),
        minIsolation: isolation,
        admitsUntrusted: ctx.values["no-untrusted"] !== true,
        untrustedOnProcess: ctx.values["untrusted-on-process"] === true,
        ownerOrg: opt(ctx.values, "org") ?? null,
        development: ctx.values.development === true,
        actor: ctx.actor,
      });
      if (flag !== null) {
        const f = await setPoolInterruptible(ctx.db, { pool: r.name, ...flag, actor: ctx.actor, orgId: null });
        ctx.out(`${describePool(r)}\n${describeInterruptible(f)}`, { ...r, ...f });
        return 0;
      }
      ctx.out(describePool(r), r);
      return 0;
    },
  },
  {
    name: "pool list",
    usage: "pool list",
    async run(ctx) {
      const rows = await listPools(ctx.db, null);
      ctx.out(
        rows.map(describePool).join("\n") || "(no pools configured: every pool is shared and needs microVM hosts)",
        rows,
      );
      return 0;
    },
  },
];

function interruptibleFlag(values: OptionValues): { interruptible: boolean; serves: string | null } | null {
  if (values.interruptible === true && values["no-interruptible"] === true)
    throw new UsageError("--interruptible and --no-interruptible exclude each other");
  if (values["no-interruptible"] === true) return { interruptible: false, serves: null };
  if (values.interruptible !== true) return null;
  const serves = opt(values, "serves");
  if (!serves) throw new UsageError("--interruptible needs --serves <on-demand pool>");
  return { interruptible: true, serves };
}

function describeInterruptible(v: InterruptibleView): string {
  return v.interruptible
    ? `${v.pool}\tinterruptible: takes background-tier jobs of ${v.serves ?? "?"} only`
    : `${v.pool}\ton-demand`;
}

function describePool(p: PoolView): string {
  const x = p.policy;
  const tenancy = p.ownerOrg ? `owned by ${p.ownerOrg}` : x.development ? "development (one operator)" : "shared";
  const untrusted = !x.admitsUntrusted
    ? "no untrusted runs"
    : x.untrustedOnProcess
      ? "untrusted also on process hosts"
      : "untrusted on microVMs only";
  return `${p.name}\tmin isolation ${x.minIsolation}\t${tenancy}\t${untrusted}`;
}
