// `schedule add|list|remove`: a repository's schedules (issue 20, docs/adr/0031). The operator acts
// as an admin of the repo's org; every change is in the org's audit trail.
import { addSchedule, listSchedules, removeSchedule, repoByFullName } from "@kiln/engine";
import { arg, opt, type CliCommand } from "./command.ts";

export const scheduleCommands: CliCommand[] = [
  {
    name: "schedule add",
    usage: `schedule add <org>/<repo> "<cron>" [--timezone <IANA zone>]   (default UTC; audited)`,
    options: { timezone: { type: "string" } },
    async run(ctx) {
      const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
      const s = await addSchedule(ctx.db, {
        caller: { orgId: repo.orgId, role: "admin", actor: ctx.actor },
        repoId: repo.id,
        cron: arg(ctx, 1, "cron"),
        timezone: opt(ctx.values, "timezone") ?? "UTC",
      });
      ctx.out(`schedule ${s.id}: ${s.cron} (${s.timezone}) on ${s.repo}; next ${s.next_runs.join(", ")}`, s);
      return 0;
    },
  },
  {
    name: "schedule list",
    usage: "schedule list <org>/<repo>",
    async run(ctx) {
      const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
      const rows = await listSchedules(ctx.db, { orgId: repo.orgId, repoId: repo.id });
      ctx.out(
        rows
          .map(
            (s) =>
              `${s.id}\t${s.cron}\t${s.timezone}\t${s.origin}\tnext ${s.next_runs[0] ?? "-"}\tlast ${s.last_slot_at ?? "-"}`,
          )
          .join("\n") || "(no schedules)",
        rows,
      );
      return 0;
    },
  },
  {
    name: "schedule remove",
    usage: "schedule remove <org>/<repo> <schedule-id>   (schedules from the workflow file are changed there; audited)",
    async run(ctx) {
      const repo = await repoByFullName(ctx.db, arg(ctx, 0, "org/repo"));
      const id = arg(ctx, 1, "schedule-id");
      await removeSchedule(ctx.db, { caller: { orgId: repo.orgId, role: "admin", actor: ctx.actor }, scheduleId: id });
      ctx.out(`schedule ${id} removed`, { id, removed: true });
      return 0;
    },
  },
];
