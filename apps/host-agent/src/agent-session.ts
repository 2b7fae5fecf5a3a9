// The agent's registration with the control plane. All claim loops share one session; when the
// server forgets it (404 SESSION.NOT_FOUND) the first loop to notice re-registers and the others
// wait on the same promise instead of registering N times.
import {
  describeFailure,
  type ControlClient,
  type RegisterSessionRequest,
  type RegisterSessionResponse,
} from "./control-client.ts";
import { FatalAgentError } from "./errors.ts";
import type { Logger } from "@kiln/logger";
import { backoffMs, sleep } from "./timing.ts";

const REGISTER_TIMEOUT_MS = 10_000;

export class AgentSession {
  private sessionId: string | null = null;
  private registering: Promise<string | null> | null = null;

  constructor(
    private readonly client: ControlClient,
    private readonly request: RegisterSessionRequest,
    private readonly logger: Logger,
    private readonly shutdown: AbortSignal,
    /** What the control plane told this agent at each registration (its registries, issue 30). */
    private readonly onRegistered: (res: RegisterSessionResponse) => void = () => undefined,
  ) {}

  /** The current session id, registering first if needed. Null once the agent is shutting down. */
  current(): Promise<string | null> {
    if (this.sessionId) return Promise.resolve(this.sessionId);
    this.registering ??= this.register().finally(() => {
      this.registering = null;
    });
    return this.registering;
  }

  /** The session id if one is registered now; never registers. */
  get id(): string | null {
    return this.sessionId;
  }

  /** The server no longer knows `sessionId`; the next `current()` registers again. */
  invalidate(sessionId: string): void {
    if (this.sessionId === sessionId) {
      this.logger.warn("session no longer known to the control plane; re-registering", { session_id: sessionId });
      this.sessionId = null;
    }
  }

  /** Retries with backoff while the control plane is unreachable; a rejected credential is fatal. */
  private async register(): Promise<string | null> {
    for (let attempt = 0; !this.shutdown.aborted; attempt++) {
      const res = await this.client.registerSession(this.request, {
        timeoutMs: REGISTER_TIMEOUT_MS,
        signal: this.shutdown,
      });
      if (res.ok) {
        // Before the id is published: no claim loop may take a job before the registries are known.
        this.onRegistered(res.data);
        this.sessionId = res.data.session_id;
        this.logger.info("registered with the control plane", {
          session_id: res.data.session_id,
          pool: res.data.pool,
          lease_ttl_ms: res.data.lease_ttl_ms,
          heartbeat_ms: res.data.heartbeat_ms,
        });
        return this.sessionId;
      }
      if (this.shutdown.aborted) break;
      if (!res.ok && res.kind === "http" && (res.status === 401 || res.status === 403)) {
        throw new FatalAgentError(
          `the control plane rejected the host credential (KILN_AGENT_TOKEN or the state directory's): ${describeFailure(res)}`,
        );
      }
      if (!res.ok && res.kind === "http" && res.status === 400) {
        throw new FatalAgentError(`the control plane rejected this agent's registration: ${describeFailure(res)}`);
      }
      const delay = backoffMs(attempt, 1_000, 30_000);
      this.logger.warn("registration failed; retrying", {
        error: describeFailure(res),
        retry_in_ms: delay,
        attempt: attempt + 1,
      });
      await sleep(delay, this.shutdown);
    }
    return null;
  }
}
