// The soak's clients: triggers (signed webhooks with delivery ids, manual triggers with idempotency
// keys) and cancels, each retried with the same identity after transport errors, 5xx and 409
// IDEMPOTENCY.IN_FLIGHT, exactly as a forge or a careful API client would.
import { sign } from "@octokit/webhooks-methods";
import type { Kind, KindTenant } from "./workload.ts";
import { sleep } from "./stack.ts";

export interface TriggerRecord {
  id: string;
  via: "webhook" | "manual";
  kind: Kind;
  /** Every run id a 2xx answer named for this identity (exactly one if all is well). */
  runIds: Set<string>;
  accepted: boolean;
  rejected: string | null;
  tries: number;
  transportErrors: number;
  cancel: { at: number; status: number | null } | null;
}

export class Driver {
  readonly records: TriggerRecord[] = [];
  readonly stats = { requests: 0, transportErrors: 0, unavailable: 0, inFlight: 0 };

  constructor(
    private readonly base: string,
    private readonly tenants: Map<Kind, KindTenant>,
    private readonly deadline: () => number,
  ) {}

  async trigger(id: string, kind: Kind, via: "webhook" | "manual"): Promise<TriggerRecord> {
    const rec: TriggerRecord = {
      id,
      via,
      kind,
      runIds: new Set(),
      accepted: false,
      rejected: null,
      tries: 0,
      transportErrors: 0,
      cancel: null,
    };
    this.records.push(rec);
    const t = this.tenant(kind);
    const send = via === "webhook" ? () => this.webhook(t, id) : () => this.manual(t, id);
    const r = await this.retrying(send, rec);
    if (r && r.status >= 200 && r.status < 300 && typeof r.json?.run_id === "string") {
      rec.accepted = true;
      rec.runIds.add(r.json.run_id);
    } else {
      rec.rejected = r ? `${r.status} ${r.json?.error?.code ?? ""}` : "no answer before the deadline";
    }
    return rec;
  }

  /** Asks for the same identity again: a duplicate must name the same run. */
  async replay(rec: TriggerRecord): Promise<void> {
    const t = this.tenant(rec.kind);
    const r = await this.retrying(
      rec.via === "webhook" ? () => this.webhook(t, rec.id) : () => this.manual(t, rec.id),
      rec,
    );
    if (r && r.status >= 200 && r.status < 300 && typeof r.json?.run_id === "string") rec.runIds.add(r.json.run_id);
  }

  async cancel(rec: TriggerRecord): Promise<void> {
    const runId = [...rec.runIds][0];
    if (!runId) return;
    const t = this.tenant(rec.kind);
    const r = await this.retrying(() => this.call("POST", `/v1/workflow-runs/${runId}/cancel`, t.token), rec);
    rec.cancel = { at: Date.now(), status: r?.status ?? null };
  }

  async getRun(kind: Kind, runId: string): Promise<any | null> {
    const r = await this.call("GET", `/v1/workflow-runs/${runId}`, this.tenant(kind).token).catch(() => null);
    return r?.status === 200 ? r.json : null;
  }

  private async retrying(
    send: () => Promise<{ status: number; json: any }>,
    rec: TriggerRecord,
  ): Promise<{ status: number; json: any } | null> {
    for (let attempt = 0; Date.now() < this.deadline(); attempt++) {
      rec.tries++;
      this.stats.requests++;
      let r: { status: number; json: any } | null = null;
      try {
        r = await send();
      } catch {
        rec.transportErrors++;
        this.stats.transportErrors++;
      }
      if (r) {
        const inFlight = r.status === 409 && r.json?.error?.code === "IDEMPOTENCY.IN_FLIGHT";
        if (r.status >= 500) this.stats.unavailable++;
        if (inFlight) this.stats.inFlight++;
        if (r.status < 500 && r.status !== 429 && !inFlight) return r;
      }
      await sleep(Math.min(2_000, 200 * 2 ** Math.min(attempt, 4)));
    }
    return null;
  }

  private tenant(kind: Kind): KindTenant {
    const t = this.tenants.get(kind);
    if (!t) throw new Error(`no tenant for ${kind}`);
    return t;
  }

  private async webhook(t: KindTenant, delivery: string) {
    const body = JSON.stringify({
      ref: "refs/heads/main",
      before: "0".repeat(40),
      after: t.sha,
      created: false,
      deleted: false,
      forced: false,
      repository: { full_name: t.repoName, name: t.repoName.split("/")[1] },
      sender: { login: "chaos" },
      commits: [],
      head_commit: null,
    });
    return this.call("POST", "/v1/webhooks/github", null, body, {
      "x-github-event": "push",
      "x-github-delivery": delivery,
      "x-hub-signature-256": await sign(t.secret, body),
    });
  }

  private manual(t: KindTenant, key: string) {
    return this.call(
      "POST",
      `/v1/repos/${t.repoId}/workflow-runs`,
      t.token,
      JSON.stringify({ workflow_path: ".kiln/workflow.yaml", commit_sha: t.sha }),
      { "idempotency-key": key },
    );
  }

  private async call(
    method: string,
    p: string,
    token: string | null,
    body?: string,
    headers: Record<string, string> = {},
  ) {
    const r = await fetch(`${this.base}${p}`, {
      method,
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body ? { "content-type": "application/json" } : {}),
        ...headers,
      },
      ...(body ? { body } : {}),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await r.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = { raw: text.slice(0, 200) };
    }
    return { status: r.status, json };
  }
}
