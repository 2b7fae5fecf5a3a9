// Ships one attempt's egress decisions to the control plane in batches. Identical destinations are
// folded into one event with a count, so a step hammering one host costs one row per report, not
// one per connection. Reporting is best effort on the wire but never silent: a refused (fenced)
// attempt stops reporting, and anything left unsent at close is logged with its size.
import type { ControlClient, EgressEventsRequest, JobTicket } from "../control-client.ts";
import { describeFailure, isRetriable } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import { sleep } from "../timing.ts";

type EgressEventWire = EgressEventsRequest["events"][number];

const MAX_BATCH = 500;
const MAX_PENDING = 5_000;
const TRIES = 3;

export class EgressReporter {
  private readonly pending = new Map<string, EgressEventWire>();
  private batchSeq = 0;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();
  private fenced = false;
  private dropped = 0;

  constructor(
    private readonly client: ControlClient,
    private readonly ticket: Pick<JobTicket, "jobId" | "jobToken" | "epoch">,
    private readonly log: Logger,
    private readonly flushMs = 1_000,
  ) {}

  record(e: Omit<EgressEventWire, "count" | "at">, at: Date): void {
    if (this.fenced) return;
    const key = `${e.decision}|${e.reason}|${e.host}|${e.port}`;
    const seen = this.pending.get(key);
    if (seen) seen.count++;
    else if (this.pending.size >= MAX_PENDING) this.dropped++;
    else this.pending.set(key, { ...e, count: 1, at: at.toISOString() });
    this.timer ??= setTimeout(() => {
      this.timer = null;
      void this.flush();
    }, this.flushMs);
  }

  /** Sends everything pending (serialised: batches go out in batch_seq order). */
  flush(): Promise<void> {
    this.sending = this.sending.then(() => this.sendAll());
    return this.sending;
  }

  /** Final flush, bounded: a dead control plane cannot hold the attempt's slot. */
  async close(deadlineMs: number): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await Promise.race([this.flush(), sleep(deadlineMs)]);
    const left = this.pending.size + this.dropped;
    if (left > 0 && !this.fenced)
      this.log.warn("egress events not reported", { destinations: this.pending.size, dropped: this.dropped });
  }

  private async sendAll(): Promise<void> {
    while (this.pending.size > 0 && !this.fenced) {
      // Taken out before sending: what arrives meanwhile starts fresh entries for the next batch.
      const keys = [...this.pending.keys()].slice(0, MAX_BATCH);
      const events = keys.map((k) => this.pending.get(k)).filter((e): e is EgressEventWire => e !== undefined);
      for (const k of keys) this.pending.delete(k);
      const body = { epoch: this.ticket.epoch, batch_seq: this.batchSeq, events };
      let sent = false;
      for (let attempt = 1; attempt <= TRIES && !sent; attempt++) {
        const r = await this.client.reportEgressEvents(this.ticket.jobId, this.ticket.jobToken, body, {
          timeoutMs: 10_000,
        });
        if (r.ok) sent = true;
        else if (r.kind === "http" && r.status === 409) {
          // Fenced: this epoch is over; its sandbox is being destroyed and nothing more is recorded.
          this.fenced = true;
          this.log.warn("egress events refused: attempt fenced", { failure: describeFailure(r) });
          return;
        } else if (!isRetriable(r) || attempt === TRIES) {
          this.log.error("egress events could not be reported", { failure: describeFailure(r), events: events.length });
          break;
        } else await sleep(250 * attempt);
      }
      // Sent or given up: either way this batch is done (its retries reused batch_seq, so the
      // control plane never recorded it twice).
      this.batchSeq++;
    }
  }
}
