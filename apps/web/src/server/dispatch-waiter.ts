import pg from "pg";

/**
 * Long-polling claims wait here for the relay's NOTIFY on `kiln_dispatch` instead of hammering the
 * database. A lost notification costs at most one poll interval: the wait always times out.
 */
export class DispatchWaiter {
  private client: pg.Client | null = null;
  private connecting: Promise<void> | null = null;
  private waiters = new Set<() => void>();

  constructor(private readonly url: string) {}

  /** Waits for a dispatch NOTIFY, `ms`, or `signal` (the caller hung up), whichever comes first. */
  async wait(ms: number, signal?: AbortSignal): Promise<void> {
    await this.ensureListening().catch(() => undefined);
    if (signal?.aborted) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.waiters.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const t = setTimeout(done, ms);
      this.waiters.add(done);
      signal?.addEventListener("abort", done, { once: true });
    });
  }

  private ensureListening(): Promise<void> {
    if (this.client) return Promise.resolve();
    if (!this.connecting) {
      const c = new pg.Client({ connectionString: this.url });
      // Heard from the start and retired once: an 'error' with no listener would kill the web
      // process, and a client that failed half-way is ended, never left open.
      let retired = false;
      const retire = () => {
        if (retired) return;
        retired = true;
        if (this.client === c) this.client = null;
        this.connecting = null;
        void c.end().catch(() => undefined);
        this.wakeAll();
      };
      c.on("error", retire);
      this.connecting = c
        .connect()
        .then(() => c.query("LISTEN kiln_dispatch"))
        .then(() => {
          if (retired) return;
          c.on("notification", () => this.wakeAll());
          this.client = c;
        })
        .catch((e: unknown) => {
          retire();
          throw e;
        })
        .finally(() => {
          if (!this.client) this.connecting = null;
        });
    }
    return this.connecting;
  }

  private wakeAll(): void {
    for (const w of [...this.waiters]) w();
  }
}
