// The fault injector: one fault at a time, at seeded random intervals, against processes picked at
// random — SIGKILL of a web, workers or host agent process (restarted after a short pause), SIGSTOP of
// an agent for longer than its lease (it is fenced and replaced, then resumes as a stale agent), and
// termination of every database session of the Kiln database.
import pg from "pg";
import type { Random } from "./random.ts";
import { sleep, type Stack } from "./stack.ts";

export type FaultKind = "kill-web" | "kill-workers" | "kill-agent" | "freeze-agent" | "terminate-db-sessions";
export interface FaultPlan {
  webs: string[];
  workers: string[];
  agents: string[];
  leaseTtlMs: number;
  /** Pause between two faults, ms. */
  gapMs: [number, number];
}

export class FaultInjector {
  readonly counts: Record<FaultKind, number> = {
    "kill-web": 0,
    "kill-workers": 0,
    "kill-agent": 0,
    "freeze-agent": 0,
    "terminate-db-sessions": 0,
  };
  sessionsTerminated = 0;
  /** Processes found dead that the injector had not killed (each was restarted). */
  readonly unexpectedExits: string[] = [];
  private stopped = false;
  /** Web restarts run in the background (next start is slow); the balancer routes around them. */
  private readonly restarting = new Map<string, Promise<void>>();

  constructor(
    private readonly stack: Stack,
    private readonly rng: Random,
    private readonly plan: FaultPlan,
    private readonly log: (line: string) => void,
  ) {}

  /** Stops injecting; resolves once every background restart has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.restarting.values());
  }

  async run(): Promise<void> {
    while (!this.stopped) {
      await sleep(this.rng.int(this.plan.gapMs[0], this.plan.gapMs[1]));
      if (this.stopped) break;
      await this.reviveUnexpected();
      const kind = this.rng.weighted<FaultKind>([
        ["kill-web", 2],
        ["kill-workers", 1],
        ["kill-agent", 3],
        ["freeze-agent", 1],
        ["terminate-db-sessions", 2],
      ]);
      try {
        await this.inject(kind);
        this.counts[kind]++;
      } catch (e) {
        this.log(`fault ${kind} failed: ${e instanceof Error ? e.message.split("\n")[0] : String(e)}`);
      }
    }
  }

  /** Restarts anything that is not running (after the faults stop, nothing may be left dead). */
  async reviveUnexpected(): Promise<void> {
    for (const name of [...this.plan.webs, ...this.plan.workers, ...this.plan.agents]) {
      if (this.stack.proc(name).alive() || this.restarting.has(name)) continue;
      this.unexpectedExits.push(name);
      this.log(`${name} exited on its own; restarting it\n${this.stack.logs([name], 1500)}`);
      await this.stack.restart(name);
    }
  }

  private async inject(kind: FaultKind): Promise<void> {
    switch (kind) {
      case "kill-web": {
        // One web down at a time: with every web gone this would be a control-plane outage, which
        // e2e/faults/db-unavailable.test.ts covers on its own.
        if (this.restarting.size > 0) return;
        const name = this.rng.pick(this.plan.webs);
        const pause = this.rng.int(200, 1500);
        this.log(`SIGKILL ${name}`);
        await this.stack.signal(name, "SIGKILL");
        const done = sleep(pause)
          .then(() => this.stack.restart(name))
          .then(
            () => undefined,
            (e: unknown) => this.log(`restart of ${name} failed: ${String(e).split("\n")[0]}`),
          )
          .finally(() => this.restarting.delete(name));
        this.restarting.set(name, done);
        return;
      }
      case "kill-workers":
        return this.killAndRestart(this.rng.pick(this.plan.workers), [200, 1000]);
      case "kill-agent":
        return this.killAndRestart(this.rng.pick(this.plan.agents), [200, 2000]);
      case "freeze-agent": {
        const name = this.rng.pick(this.plan.agents);
        this.log(`SIGSTOP ${name}`);
        await this.stack.signal(name, "SIGSTOP");
        await sleep(this.plan.leaseTtlMs + this.rng.int(1000, 2500));
        await this.stack.signal(name, "SIGCONT");
        return;
      }
      case "terminate-db-sessions":
        return this.terminateSessions();
    }
  }

  private async killAndRestart(name: string, pauseMs: [number, number]): Promise<void> {
    this.log(`SIGKILL ${name}`);
    await this.stack.signal(name, "SIGKILL");
    await sleep(this.rng.int(pauseMs[0], pauseMs[1]));
    await this.stack.restart(name);
  }

  private async terminateSessions(): Promise<void> {
    const c = new pg.Client({ connectionString: this.stack.dbUrl });
    c.on("error", () => undefined);
    await c.connect();
    try {
      const r = await c.query(
        "SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
      );
      this.sessionsTerminated += r.rows.filter((x: { ok: boolean }) => x.ok).length;
      this.log(`terminated ${r.rowCount} database sessions`);
    } finally {
      await c.end().catch(() => undefined);
    }
  }
}
