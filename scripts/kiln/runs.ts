// `run rerun-failed` and `flaky list` (issue 20, docs/adr/0030): the operator's side of re-runs and flakes.
import { listFlakyJobsOfRepo, rerunFailedJobsAsOperator } from "@kiln/engine";
import { arg, type CliCommand } from "./command.ts";

export const runCommands: CliCommand[] = [
  {
    name: "run rerun-failed",
    usage: "run rerun-failed <run_id>             (new run: successes pinned, failed jobs and their descendants again)",
    async run(ctx) {
      const r = await rerunFailedJobsAsOperator(ctx.db, { runId: arg(ctx, 0, "run_id"), actor: ctx.actor });
      const pinned = r.pinned.map((p) => `  pinned  ${p.name}  (reused from run ${p.reusedFrom.runId})`);
      const again = r.rerun.map((j) => `  rerun   ${j.name}`);
      ctx.out([`run ${r.runId} (re-run of ${r.parentRunId})`, ...pinned, ...again].join("\n"), r);
      return 0;
    },
  },
  {
    name: "flaky list",
    usage: "flaky list <org>/<repo>                (jobs that passed and failed at one commit and definition)",
    async run(ctx) {
      const rows = await listFlakyJobsOfRepo(ctx.db, { repo: arg(ctx, 0, "org>/<repo") });
      ctx.out(
        rows
          .map(
            (f) =>
              `${f.name}\t${f.commits} commit(s)\t${f.attempts} attempts\tlast seen ${f.last_seen}\trun ${f.last_run_id}`,
          )
          .join("\n") || "(no flaky jobs)",
        rows,
      );
      return 0;
    },
  },
];
