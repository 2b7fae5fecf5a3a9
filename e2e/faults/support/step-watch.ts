import { readdir, readFile } from "node:fs/promises";

/**
 * Watches the host's process table for a job's step: every process whose command line holds
 * `marker`, by the attempt epoch in its environment (KILN_ATTEMPT). Steps cannot write outside
 * their own sandbox (the process driver's private view), and a sandbox that is destroyed takes its
 * files with it, so "is the step still running?" is answered from /proc, which is also the most
 * direct evidence: a process that exists is running, whatever it manages to write.
 */
export class StepWatch {
  private readonly lastSeen = new Map<number, number>();
  private readonly firstSeen = new Map<number, number>();
  private timer: NodeJS.Timeout | null = null;
  private polling = false;

  constructor(
    private readonly marker: string,
    private readonly everyMs = 50,
  ) {}

  start(): this {
    this.timer = setInterval(() => void this.poll(), this.everyMs);
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** When a process of this attempt's step was last seen (epoch ms), or null. */
  lastSeenAt(epoch: number): number | null {
    return this.lastSeen.get(epoch) ?? null;
  }

  /** How long this attempt's step has been seen running, in ms (0 if never). */
  seenForMs(epoch: number): number {
    const first = this.firstSeen.get(epoch);
    const last = this.lastSeen.get(epoch);
    return first === undefined || last === undefined ? 0 : last - first;
  }

  /**
   * Whether this attempt's step is running now, from a scan made for this question (a background
   * poll can lag by hundreds of milliseconds on a loaded machine).
   */
  async runningNow(epoch: number): Promise<boolean> {
    return (await this.scan()).has(epoch);
  }

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const now = Date.now();
      for (const epoch of await this.scan()) {
        if (!this.firstSeen.has(epoch)) this.firstSeen.set(epoch, now);
        this.lastSeen.set(epoch, now);
      }
    } finally {
      this.polling = false;
    }
  }

  /** The epochs of the marked processes that exist at the time of the scan. */
  private async scan(): Promise<Set<number>> {
    const found = new Set<number>();
    for (const pid of await readdir("/proc")) {
      if (!/^\d+$/.test(pid)) continue;
      const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
      if (!cmdline.includes(this.marker)) continue;
      const environ = await readFile(`/proc/${pid}/environ`, "utf8").catch(() => "");
      const epoch = Number(/(?:^|\0)KILN_ATTEMPT=(\d+)/.exec(environ)?.[1] ?? NaN);
      if (Number.isInteger(epoch)) found.add(epoch);
    }
    return found;
  }
}
