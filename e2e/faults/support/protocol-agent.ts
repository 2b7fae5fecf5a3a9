// A scripted host agent: speaks the real agent protocol (docs: packages/domain/src/agent-protocol) to
// the real web server, one call at a time, so a test decides exactly when an agent claims, goes
// silent, reports, or comes back after it was replaced.
import { randomUUID } from "node:crypto";

export interface Ticket {
  runId: string;
  jobId: string;
  attemptId: string;
  epoch: number;
  jobToken: string;
  leaseTtlMs: number;
  job: { name: string; artifacts: { publish: { name: string; path: string }[] } };
}

export interface Reply {
  status: number;
  json: any;
}

export class ProtocolAgent {
  sessionId = "";

  constructor(
    private readonly base: string,
    private readonly hostToken: string,
    readonly hostname: string,
  ) {}

  async register(): Promise<void> {
    const r = await this.post("/v1/agent/sessions", this.hostToken, {
      hostname: this.hostname,
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
    });
    if (r.status !== 201 && r.status !== 200) throw new Error(`register: ${r.status} ${JSON.stringify(r.json)}`);
    this.sessionId = r.json.session_id;
  }

  /** Claims until a ticket arrives (long-polls of `waitMs`), or null after `timeoutMs`. */
  async claim(timeoutMs = 30_000, waitMs = 1_000): Promise<Ticket | null> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const r = await this.post("/v1/agent/claims", this.hostToken, {
        session_id: this.sessionId,
        claim_request_id: randomUUID(),
        wait_ms: waitMs,
      });
      if (r.status === 200) return r.json as Ticket;
      if (r.status !== 204) throw new Error(`claim: ${r.status} ${JSON.stringify(r.json)}`);
    }
    return null;
  }

  heartbeat(t: Ticket, epoch = t.epoch): Promise<Reply> {
    return this.post(`/v1/agent/jobs/${t.jobId}/heartbeat`, t.jobToken, { epoch });
  }

  complete(t: Ticket, outcome: string, extra: Record<string, unknown> = {}): Promise<Reply> {
    return this.post(`/v1/agent/jobs/${t.jobId}/complete`, t.jobToken, {
      epoch: t.epoch,
      outcome,
      sandbox_destroyed: true,
      ...extra,
    });
  }

  /** Any other job-token call (logs, artifacts), by path relative to /v1/agent/jobs/{job}. */
  jobCall(t: Ticket, rel: string, body: unknown): Promise<Reply> {
    return this.post(`/v1/agent/jobs/${t.jobId}${rel}`, t.jobToken, body);
  }

  async post(p: string, token: string, body: unknown): Promise<Reply> {
    const r = await fetch(`${this.base}${p}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await r.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = { raw: text };
    }
    return { status: r.status, json };
  }
}
