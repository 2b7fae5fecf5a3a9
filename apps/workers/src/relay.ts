import type { Db } from "@kiln/db";
import { nextDeferredDelayMs, relayOutbox, type DispatchPayload, type OutboxMessage } from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import pg from "pg";
import type { PgBoss } from "pg-boss";

/**
 * The outbox relay: committed rows -> pg-boss work queues (`dispatch-<pool>`, `run-freeze`).
 * It wakes on the `kiln_outbox` NOTIFY its writers send on commit and polls as a backstop.
 */
export class OutboxRelay {
  private stopped = false;
  private wake: (() => void) | null = null;
  private listener: pg.Client | null = null;
  private readonly queues = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly boss: PgBoss,
    private readonly databaseUrl: string,
    private readonly pollMs: number,
    /** Under the fair policy dispatch hints are only wake-ups: NOTIFY, no queue row (ADR 0009). */
    private readonly hintsAsQueueJobs: boolean,
    private readonly log: Logger,
    /** Called after freeze requests were queued, so this process's freeze worker fetches now. */
    private readonly onQueued: (queue: string) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    await this.listen();
    void this.loop();
  }

  stop(): void {
    this.stopped = true;
    this.wake?.();
    void this.listener?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    const c = new pg.Client({ connectionString: this.databaseUrl });
    let retired = false;
    // One reconnect per client, however many times it fails: a client can emit 'error' more than
    // once, or fail in connect() after its 'error', and every extra reconnect used to start a
    // client of its own. Under repeated session cuts that doubled the relay's connections each
    // time, until the database refused everyone ("too many clients", e2e/faults/db-sessions-cut).
    const retire = () => {
      if (retired) return;
      retired = true;
      if (this.listener === c) this.listener = null;
      void c.end().catch(() => undefined);
      // Reconnect later; polling keeps the relay correct meanwhile.
      if (!this.stopped) setTimeout(() => void this.listen().catch(() => undefined), 1_000);
    };
    c.on("error", retire);
    try {
      await c.connect();
      await c.query("LISTEN kiln_outbox");
    } catch (e) {
      retire();
      throw e;
    }
    c.on("notification", () => this.wake?.());
    if (retired) return;
    this.listener = c;
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      let moved = 0;
      try {
        moved = await relayOutbox(this.db, (m) => this.publish(m));
      } catch (e) {
        this.log.error("relay pass failed", { err: e });
      }
      if (moved > 0) continue;
      const deferred = await nextDeferredDelayMs(this.db).catch(() => null);
      const sleep = Math.min(this.pollMs, deferred ?? this.pollMs);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, sleep);
        this.wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      this.wake = null;
    }
  }

  private async publish(messages: OutboxMessage[]): Promise<void> {
    const pools = new Set<string>();
    let freezes = 0;
    for (const m of messages) {
      if (m.topic === "job.dispatch") {
        const p = m.payload as DispatchPayload;
        if (this.hintsAsQueueJobs) {
          const queue = `dispatch-${p.pool}`;
          await this.ensureQueue(queue);
          await this.boss.send(queue, p, { expireInSeconds: 300, retentionSeconds: 3600 });
        }
        pools.add(p.pool);
      } else if (m.topic === "forge.status") {
        // One queued delivery per run (stately queue): a second send while one waits is dropped,
        // and the waiting one reads the run's latest state anyway.
        const p = m.payload as { runId: string };
        await this.boss.send("forge-status", p, { singletonKey: p.runId });
      } else if (m.topic === "run.freeze") {
        await this.ensureQueue("run-freeze");
        await this.boss.send("run-freeze", m.payload);
        freezes++;
      } else if (m.topic === "environment.pointer_moved") {
        // The deployer's trigger (issue 18). A relay pass repeated after a crash may queue a second
        // copy: the consumer compares pointerSeq with the environment's current one (idempotent).
        const p = m.payload as { environmentId: string; pointerSeq: string };
        await this.ensureQueue("environment-pointer-moved");
        await this.boss.send("environment-pointer-moved", p, { singletonKey: `${p.environmentId}:${p.pointerSeq}` });
        this.onQueued("environment-pointer-moved");
      } else {
        // Attestation work (issue 17). A relay pass repeated after a crash may queue a second
        // copy; both handlers are idempotent (one statement and one leaf per job).
        const queue = m.topic === "attestation.create" ? "attest-job" : "verify-attestation";
        await this.ensureQueue(queue);
        await this.boss.send(queue, m.payload);
        this.onQueued(queue);
      }
    }
    if (freezes > 0) this.onQueued("run-freeze");
    for (const pool of pools) await this.db.$executeRaw`SELECT pg_notify('kiln_dispatch', ${pool})`;
  }

  private async ensureQueue(name: string): Promise<void> {
    if (this.queues.has(name)) return;
    if (!(await this.boss.getQueue(name))) await this.boss.createQueue(name, { retryLimit: 0 }).catch(() => undefined);
    this.queues.add(name);
  }
}
