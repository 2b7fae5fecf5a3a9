// Reports the agent's fleet stats (issue 22, docs/adr/0035) every KILN_AGENT_STATS_MS, and the first
// time as soon as a session exists, so the fleet view has them before any job runs. The answer carries
// an operator's reclaim notice; the loop hands it to the agent once. A failed report is only logged:
// stats are advisory and the next tick sends fresh figures anyway.
import type { AgentSession } from "../agent-session.ts";
import { describeFailure, type ControlClient, type SessionStatsRequest } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import { sleep } from "../timing.ts";

export interface StatsLoopDeps {
  client: ControlClient;
  session: AgentSession;
  intervalMs: number;
  gather: () => SessionStatsRequest;
  /** An operator asked for this host back (POST /v1/pools/{pool}/hosts/{host}/reclaim). */
  onReclaim: () => void;
  logger: Logger;
  shutdown: AbortSignal;
}

export class StatsLoop {
  private reclaimed = false;

  constructor(private readonly deps: StatsLoopDeps) {}

  /** Runs until shutdown; never rejects. */
  async run(): Promise<void> {
    const { shutdown, intervalMs } = this.deps;
    while (!shutdown.aborted) {
      await this.reportOnce();
      await sleep(intervalMs, shutdown);
    }
  }

  /**
   * The agent's last report, after its jobs were reported: the control plane ends the session at
   * once instead of waiting for it to go quiet. Best effort: a lost one leaves the session to age out.
   */
  async reportEnding(sessionId: string | null): Promise<void> {
    if (!sessionId) return;
    const res = await this.deps.client.sessionStats(
      sessionId,
      { ...this.deps.gather(), ending: true },
      { timeoutMs: 2_000 },
    );
    if (!res.ok) this.deps.logger.warn("could not end the session", { error: describeFailure(res) });
  }

  async reportOnce(): Promise<void> {
    const { client, session, logger, shutdown } = this.deps;
    const sessionId = await session.current().catch(() => null);
    if (!sessionId || shutdown.aborted) return;
    const res = await client.sessionStats(sessionId, this.deps.gather(), {
      timeoutMs: Math.max(2_000, this.deps.intervalMs),
      signal: shutdown,
    });
    if (res.ok) {
      if (res.data.reclaim_requested && !this.reclaimed) {
        this.reclaimed = true;
        logger.warn("reclaim notice from the control plane");
        this.deps.onReclaim();
      }
      return;
    }
    if (shutdown.aborted) return;
    if (res.kind === "http" && res.status === 404 && res.code === "SESSION.NOT_FOUND") session.invalidate(sessionId);
    logger.warn("fleet stats report failed", { error: describeFailure(res) });
  }
}
