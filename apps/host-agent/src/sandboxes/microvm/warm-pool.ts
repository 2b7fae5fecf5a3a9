// Pre-booted sandboxes restored from the base snapshot; none has ever run tenant code. take() hands
// one out and it is never returned (the caller destroys it after its job); the pool refills in the
// background, one restore at a time so refills do not steal the CPU from running jobs.
import { rm } from "node:fs/promises";
import type { Logger } from "@kiln/logger";
import { errorMessage } from "@kiln/logger";
import { sleep } from "../../timing.ts";
import type { BootedVm } from "./vm-boot.ts";

const REFILL_BACKOFF_MS = 5_000;

export class WarmPool {
  private ready: BootedVm[] = [];
  private filling: Promise<void> | null = null;
  private stopped = false;
  private failuresInARow = 0;
  private readonly stopSignal = new AbortController();

  constructor(
    private readonly size: number,
    private readonly restore: () => Promise<BootedVm>,
    private readonly log: Logger,
  ) {}

  get readyCount(): number {
    return this.ready.length;
  }

  /** A ready VM (marked used by leaving the pool), or null: the caller cold-boots. */
  take(): BootedVm | null {
    let vm = this.ready.shift() ?? null;
    // A pooled VM that died while idle is discarded, never handed out.
    while (vm && !vm.vm.alive) {
      void discard(vm);
      vm = this.ready.shift() ?? null;
    }
    this.refill();
    return vm;
  }

  refill(): void {
    if (this.filling || this.stopped) return;
    this.filling = this.fillLoop().finally(() => (this.filling = null));
  }

  /** Kills every pooled VM, including one still being restored. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stopSignal.abort();
    await Promise.all(this.ready.splice(0).map(discard));
    await this.filling;
  }

  private async fillLoop(): Promise<void> {
    while (!this.stopped && this.ready.length < this.size) {
      try {
        const vm = await this.restore();
        if (this.stopped) {
          await discard(vm);
          return;
        }
        this.ready.push(vm);
        this.failuresInARow = 0;
        this.log.info("warm pool: sandbox ready", {
          restore_ms: Math.round(vm.bootMs),
          pool_ready: this.ready.length,
          pool_size: this.size,
        });
      } catch (err) {
        this.failuresInARow++;
        this.log.error("warm pool: restore failed", {
          error: errorMessage(err),
          failures_in_a_row: this.failuresInARow,
        });
        await sleep(REFILL_BACKOFF_MS * Math.min(this.failuresInARow, 12), this.stopSignal.signal);
      }
    }
  }
}

async function discard(b: BootedVm): Promise<void> {
  await b.vm.kill();
  await rm(b.runDir, { recursive: true, force: true });
}
