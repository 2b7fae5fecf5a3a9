// `entitlement` and `pool` commands: who may use which capacity, and how isolated it is (docs/adr/0022).
import { listEntitlements, listPools, type PoolView, setEntitlement, setPoolPolicy } from "@kiln/engine";
import { arg, type CliCommand, intOpt, opt, UsageError } from "./command.ts";

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
     whose process hosts may serve several orgs; untrusted runs need microVMs unless an owned pool says otherwise)`,
    options: {
      isolation: { type: "string" },
      org: { type: "string" },
      development: { type: "boolean", default: false },
      "no-untrusted": { type: "boolean", default: false },
      "untrusted-on-process": { type: "boolean", default: false },
    },
    async run(ctx) {
      const isolation = opt(ctx.values, "isolation");
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
