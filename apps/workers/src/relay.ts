import type { Db } from "@kiln/db";
import {
  nextDeferredDelayMs,
  OUTBOX_TOPICS,
  parseOutboxMessage,
  relayOutbox,
  type OutboxMessage,
  type OutboxTopicSpec,
  type ParsedOutboxMessage,
} from "@kiln/engine";
import type { Logger } from "@kiln/logger";
import pg from "pg";
import type { PgBoss } from "pg-boss";

/**
 * The outbox relay: committed rows -> pg-boss work queues, as the topic registry says
 * (OUTBOX_TOPICS in @kiln/engine).
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

  /**
   * Table-driven from the topic registry (ADR 0038): each row goes where its topic's spec says. A
   * row whose topic is unknown or whose payload does not parse is logged and not sent: no consumer
   * could take it, and holding it back would stall every row behind it.
   */
  private async publish(messages: OutboxMessage[]): Promise<void> {
    const pools = new Set<string>();
    const batches = new Map<string, object[]>();
    const woken = new Set<string>();
    for (const m of messages) {
      let parsed: ParsedOutboxMessage;
      try {
        parsed = parseOutboxMessage(m.topic, m.payload);
      } catch (err) {
        this.log.error("outbox row refused", { outbox_id: String(m.id), topic: m.topic, err });
        continue;
      }
      const spec: OutboxTopicSpec = OUTBOX_TOPICS[parsed.topic];
      const { payload } = parsed;
      const queue = spec.queue(payload);
      const pool = spec.pool?.(payload);
      if (pool !== undefined) pools.add(pool);
      // Under the fair policy dispatch hints are only wake-ups: NOTIFY, no queue row (ADR 0009).
      if (spec.delivery === "dispatch-hint" && !this.hintsAsQueueJobs) continue;
      if (spec.delivery === "batch") {
        batches.set(queue, [...(batches.get(queue) ?? []), payload]);
        continue;
      }
      if (spec.ensureQueue) await this.ensureQueue(queue);
      const key = spec.singletonKey?.(payload);
      await this.boss.send(queue, payload, {
        ...spec.sendOptions,
        ...(key === undefined ? {} : { singletonKey: key }),
      });
      if (spec.wakeWorker) woken.add(queue);
    }
    // One insert per queue per pass. A relay pass repeated after a crash may queue a second copy;
    // the consumers are idempotent.
    for (const [queue, payloads] of batches) {
      await this.ensureQueue(queue);
      await this.boss.insert(
        queue,
        payloads.map((data) => ({ data })),
      );
      this.onQueued(queue);
    }
    for (const queue of woken) this.onQueued(queue);
    for (const pool of pools) await this.db.$executeRaw`SELECT pg_notify('kiln_dispatch', ${pool})`;
  }

  private async ensureQueue(name: string): Promise<void> {
    if (this.queues.has(name)) return;
    if (!(await this.boss.getQueue(name))) await this.boss.createQueue(name, { retryLimit: 0 }).catch(() => undefined);
    this.queues.add(name);
  }
}
