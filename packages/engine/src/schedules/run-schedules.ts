import type { Db } from "@kiln/db";
import { decideTick, isDomainError } from "@kiln/domain";
import { silentLogger, type Logger } from "@kiln/logger";
import type { SourcePolicy } from "@kiln/oci";
import { admitScheduledRun } from "./admit-scheduled.ts";
import { resolveBranchHead } from "./branch-head.ts";
import { forgeCredentialForFetch, type ForgeConfig } from "../forge/index.ts";

export interface ScheduleTickReport {
  due: number;
  admitted: number;
  /** Due slots another worker (or an earlier run of this tick) admitted first. */
  taken: number;
  /** Due slots whose branch head could not be read; the next tick tries again. */
  unavailable: number;
}

/**
 * One scheduler pass over every schedule (issue 20): each due slot is admitted once at the default
 * branch's head as git reports it now. Safe to run concurrently in any number of worker processes
 * and to repeat: the admission's compare-and-set and the slot's primary key decide who admits.
 * `now` defaults to the database's clock, the one every worker shares.
 */
export async function runScheduleTick(
  db: Db,
  input: {
    source: SourcePolicy;
    now?: Date;
    log?: Logger /** Private repos' heads (issue 28). */;
    forge?: ForgeConfig;
  },
): Promise<ScheduleTickReport> {
  const log = input.log ?? silentLogger;
  const rows = await db.$queryRaw<
    {
      id: string;
      org_id: string;
      cron: string;
      timezone: string;
      created_at: Date;
      last_slot_at: Date | null;
      repo_id: string;
      clone_url: string;
      default_branch: string;
      now: Date;
    }[]
  >`
    SELECT s.id, s.org_id, s.cron, s.timezone, s.created_at, s.last_slot_at, r.id AS repo_id, r.clone_url, r.default_branch,
           now() AS now
    FROM schedule s JOIN repo r ON r.id = s.repo_id ORDER BY s.id`;
  const report: ScheduleTickReport = { due: 0, admitted: 0, taken: 0, unavailable: 0 };
  // One ls-remote per repository per pass, however many of its schedules are due.
  const heads = new Map<string, Promise<string>>();
  for (const s of rows) {
    const now = input.now ?? s.now;
    const d = decideTick(
      { id: s.id, cron: s.cron, timezone: s.timezone, createdAt: s.created_at, lastSlotAt: s.last_slot_at },
      now,
    );
    if (d.kind !== "admit") continue;
    report.due++;
    let head = heads.get(s.repo_id);
    if (!head) {
      const { forge } = input;
      head = resolveBranchHead(
        input.source,
        s.clone_url,
        s.default_branch,
        undefined,
        forge ? () => forgeCredentialForFetch(db, forge, s.repo_id, s.clone_url) : undefined,
      );
      heads.set(s.repo_id, head);
    }
    let sha: string;
    try {
      sha = await head;
    } catch (e) {
      if (!isDomainError(e)) throw e;
      report.unavailable++;
      log.warn("schedule slot waits: default branch head unavailable", {
        org_id: s.org_id,
        schedule_id: s.id,
        code: e.code,
        err: e.message,
      });
      continue;
    }
    const r = await admitScheduledRun(db, {
      scheduleId: s.id,
      slot: d.slot,
      readLastSlotAt: s.last_slot_at,
      commitSha: sha,
    });
    if (r.kind === "admitted") {
      report.admitted++;
      log.info("scheduled run admitted", {
        org_id: s.org_id,
        schedule_id: s.id,
        slot: d.slot.toISOString(),
        run_id: r.runId,
      });
    } else report.taken++;
  }
  return report;
}
