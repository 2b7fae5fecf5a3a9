// Runs claimed attempts and keeps track of them so a shutdown can interrupt every one.
import { AttemptRun, type AttemptDeps } from "./attempts/attempt-run.ts";
import type { JobTicket } from "./control-client.ts";
import { errorMessage } from "@kiln/logger";

export class JobRunner {
  private readonly active = new Map<string, { run: AttemptRun; done: Promise<void> }>();
  private stopping: "shutdown" | "reclaimed" | null = null;

  constructor(private readonly deps: AttemptDeps) {}

  get activeCount(): number {
    return this.active.size;
  }

  /** Runs one attempt to its end (reported or fenced). Never throws. */
  async run(ticket: JobTicket, claimedAt: number): Promise<void> {
    const logger = this.deps.logger.child({
      org_id: ticket.orgId,
      run_id: ticket.runId,
      job_id: ticket.jobId,
      attempt_id: ticket.attemptId,
      epoch: ticket.epoch,
      job_name: ticket.job.name,
    });
    logger.info("job claimed", {
      steps: ticket.job.steps.length,
      trust_class: ticket.trustClass,
      timeout_minutes: ticket.job.timeoutMinutes,
    });
    const run = new AttemptRun(ticket, claimedAt, { ...this.deps, logger });
    const done = run.run().catch((err: unknown) => logger.error("attempt crashed", { error: errorMessage(err) }));
    this.active.set(ticket.attemptId, { run, done });
    // A claim that raced with shutdown: release it honestly instead of running it.
    if (this.stopping) run.stop(this.stopping);
    try {
      await done;
    } finally {
      this.active.delete(ticket.attemptId);
    }
  }

  /**
   * Kills every running attempt (each destroys its sandbox and reports agent.shutdown, or
   * host.reclaimed when the cloud is taking the host back).
   */
  async shutdown(reason: "shutdown" | "reclaimed" = "shutdown"): Promise<void> {
    this.stopping ??= reason;
    const entries = [...this.active.values()];
    for (const { run } of entries) run.stop(reason);
    await Promise.all(entries.map((e) => e.done));
  }
}
