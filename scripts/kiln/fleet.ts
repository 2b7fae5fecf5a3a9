// `fleet` commands (issue 22, docs/adr/0035): the operator's view of every host with its agent's
// stats, reclaim notices for interruptible hosts, and the share of background minutes they carried.
import { DomainError } from "@kiln/domain";
import { type FleetHost, interruptibleShares, listFleet, requestReclaim } from "@kiln/engine";
import { arg, type CliCommand, intOpt, opt } from "./command.ts";

// Hosts without a heartbeat for this long read as offline (the engine's default lease).
const OFFLINE_AFTER_MS = 60_000;

async function orgId(ctx: Parameters<CliCommand["run"]>[0]): Promise<string | null> {
  const slug = opt(ctx.values, "org");
  if (!slug) return null;
  const rows = await ctx.db.$queryRaw<{ id: string }[]>`SELECT id FROM org WHERE slug = ${slug}`;
  if (!rows[0]) throw new DomainError("ORG.NOT_FOUND", `no org named ${slug}`);
  return rows[0].id;
}

function describeHost(h: FleetHost): string {
  const warm = h.warmPool
    ? `warm ${h.warmPool.size} (${h.warmPool.hits} hits / ${h.warmPool.misses} misses)`
    : "warm -";
  return [
    h.name,
    h.pool + (h.interruptible ? " (interruptible)" : ""),
    h.state + (h.quarantineReason ? `: ${h.quarantineReason}` : ""),
    `slots ${h.slots.inUse}/${h.slots.total ?? "?"}`,
    `agent ${h.agentVersion ?? "?"}`,
    warm,
    `failures/1h ${h.platformFailuresLastHour}`,
    `reclaims/1h ${h.reclaimsLastHour}`,
    `heartbeat ${h.lastHeartbeatAt ?? "never"}`,
  ].join("\t");
}

export const fleetCommands: CliCommand[] = [
  {
    name: "fleet list",
    usage:
      "fleet list [--org <org>]   (every host, or one org's: state, slots, agent version, warm pool, failures and reclaims)",
    options: { org: { type: "string" } },
    async run(ctx) {
      const hosts = await listFleet(ctx.db, { orgId: await orgId(ctx), leaseTtlMs: OFFLINE_AFTER_MS });
      ctx.out(hosts.map(describeHost).join("\n") || "(no hosts)", hosts);
      return 0;
    },
  },
  {
    name: "fleet reclaim",
    usage:
      "fleet reclaim <pool> <host>   (a reclaim notice to an interruptible host: its jobs re-dispatch to on-demand capacity; audited)",
    async run(ctx) {
      const r = await requestReclaim(ctx.db, {
        pool: arg(ctx, 0, "pool"),
        host: arg(ctx, 1, "host"),
        orgId: null,
        actor: ctx.actor,
      });
      ctx.out(
        `reclaim notice left for ${r.name} (${r.sessions} live session(s)); its agent stops at its next stats report`,
        r,
      );
      return 0;
    },
  },
  {
    name: "fleet share",
    usage:
      "fleet share [--pool <pool>] [--org <org>] [--window-hours 24]   (background job-minutes on interruptible capacity, target 55%)",
    options: { pool: { type: "string" }, org: { type: "string" }, "window-hours": { type: "string" } },
    async run(ctx) {
      const rows = await interruptibleShares(ctx.db, {
        orgId: await orgId(ctx),
        windowHours: intOpt(ctx.values, "window-hours") ?? 24,
        pool: opt(ctx.values, "pool") ?? null,
      });
      const lines = rows.map(
        (r) =>
          `${r.pool}\t${r.share === null ? "no background work" : `${(r.share * 100).toFixed(1)}%`} of ${r.eligibleMinutes.toFixed(1)} background min` +
          `\ttarget ${r.target * 100}%${r.meetsTarget === false ? " MISSED" : ""}\treclaims ${r.reclaims}\tserved by ${r.interruptiblePools.join(",") || "-"}`,
      );
      ctx.out(lines.join("\n") || "(no background work in the window)", rows);
      return 0;
    },
  },
];
