import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { importSPKI, jwtVerify } from "jose";
import {
  BAD_CREDENTIALS_BODY,
  checkRunExample,
  commitStatusExample,
  type DeliveryItem,
  installationExample,
  installationTokenExample,
  NOT_FOUND_BODY,
  PRIMARY_RATE_LIMIT_BODY,
  repoHookExample,
  repositoryExample,
  SECONDARY_RATE_LIMIT_BODY,
} from "./github-examples.ts";

// A local stand-in for GitHub's REST API, for tests only: the endpoints Kiln calls, answering with
// the documentation's example bodies and headers (github-examples.ts). It records every request,
// can be switched to fail or to rate-limit, verifies App JWTs with jose (an implementation Kiln did
// not write), and sends signed webhooks (@octokit/webhooks-methods) the way GitHub does, keeping
// the delivery log that GET .../deliveries lists and POST .../attempts redelivers from. Repository
// names match without regard to case, as GitHub's do (`Acme/App` is `acme/app`).

/** The repository id of GitHub's own webhook examples (@octokit/webhooks-examples): a fake repo's default. */
export const EXAMPLE_REPOSITORY_ID = 186853002;

export interface RecordedRequest {
  method: string;
  path: string;
  authorization: string | null;
  body: unknown;
  status: number;
  at: number;
}

export interface FakeRepoOptions {
  /** The per-repo token Kiln must present (absent: only an App installation token works). */
  token?: string;
  /** The repo's webhook: where deliveries go (absent: the App's hook, if any). */
  hook?: { id: number; url: string; secret: string };
  installationId?: number;
  repositoryId?: number;
  /** False: the token may read the repo but not push to it. */
  tokenCanPush?: boolean;
}

interface FakeRepo extends FakeRepoOptions {
  fullName: string;
  statuses: Map<string, StatusRecord[]>;
}

export interface StatusRecord {
  sha: string;
  state: string;
  description: string | null;
  target_url: string | null;
  context: string;
  at: number;
}

export interface CheckRunRecord {
  id: number;
  repo: string;
  name: string;
  head_sha: string;
  status: string;
  conclusion: string | null;
  details_url: string | null;
  external_id: string | null;
  output: { title: string | null; summary: string | null; text: string | null };
  updates: number;
}

interface StoredDelivery extends DeliveryItem {
  hookKey: string;
  body: string;
}

type Mode =
  | { kind: "ok" }
  | { kind: "fail"; status: number; remaining: number | null }
  | {
      kind: "rate_limit";
      /** Only requests whose path contains this are limited (e.g. one repo's statuses). */
      pathIncludes: string | null;
      flavour: "primary" | "secondary";
      status: 403 | 429;
      retryAfterS: number;
      remaining: number | null;
    };

export interface FakeForge {
  /** The API base URL to give Kiln as KILN_GITHUB_API_URL. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  addRepo(fullName: string, o: FakeRepoOptions): void;
  /** Every status received for a commit, oldest first (GitHub keeps them all; the latest per context wins). */
  statuses(fullName: string, sha: string): StatusRecord[];
  /** The latest status per context, as GitHub's combined status shows it. */
  latestStatuses(fullName: string, sha: string): Map<string, StatusRecord>;
  checkRuns(fullName: string): CheckRunRecord[];
  /** The next `times` API calls (null: all until recover()) answer `status` (default 503). */
  fail(o?: { status?: number; times?: number | null }): void;
  rateLimit(o: {
    flavour: "primary" | "secondary";
    status?: 403 | 429;
    retryAfterS: number;
    times?: number | null;
    /** Limit only requests whose path contains this (default: every request). */
    pathIncludes?: string;
  }): void;
  recover(): void;
  /** Sends a signed webhook as GitHub would and records the delivery (also when Kiln was unreachable). */
  deliver(
    fullName: string,
    event: string,
    payload: Record<string, unknown>,
  ): Promise<{ guid: string; id: number; statusCode: number }>;
  deliveries(fullName: string | null): DeliveryItem[];
  installationTokensIssued(): number;
  stop(): Promise<void>;
}

export interface FakeForgeOptions {
  /** A GitHub App: its id, public key (SPKI PEM) for verifying Kiln's JWTs, and its own webhook. */
  app?: { id: number; publicKeyPem: string; hook?: { url: string; secret: string } };
  /** Installation tokens' lifetime (GitHub: one hour). */
  installationTokenTtlS?: number;
}

export async function startFakeForge(opts: FakeForgeOptions = {}): Promise<FakeForge> {
  const repos = new Map<string, FakeRepo>();
  const requests: RecordedRequest[] = [];
  const checkRuns: CheckRunRecord[] = [];
  const deliveries: StoredDelivery[] = [];
  const installationTokens = new Map<string, { installationId: number; expiresAt: number }>();
  let mode: Mode = { kind: "ok" };
  let nextId = 1_000;
  let nextDeliveryId = 12_000_000_000;
  const appKey = opts.app ? await importSPKI(opts.app.publicKeyPem, "RS256") : null;

  const server: Server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      send(res, 500, { message: String(err) });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks).toString("utf8");
    const body: unknown = raw ? JSON.parse(raw) : null;
    const u = new URL(req.url ?? "/", url);
    const method = req.method ?? "GET";
    const auth = req.headers.authorization ?? null;
    const record = (status: number) =>
      requests.push({ method, path: u.pathname + u.search, authorization: auth, body, status, at: Date.now() });

    const injected = injectedFault(u.pathname);
    if (injected) {
      record(injected.status);
      send(res, injected.status, injected.body, injected.headers);
      return;
    }
    const r = await route(method, u, auth, body);
    record(r.status);
    send(res, r.status, r.body, r.headers);
  }

  function injectedFault(pathname: string): { status: number; body: unknown; headers: Record<string, string> } | null {
    if (mode.kind === "ok") return null;
    const m = mode;
    if (m.kind === "rate_limit" && m.pathIncludes !== null && !pathname.includes(m.pathIncludes)) return null;
    if (m.remaining !== null) {
      m.remaining--;
      if (m.remaining < 0) {
        mode = { kind: "ok" };
        return null;
      }
    }
    if (m.kind === "fail") return { status: m.status, body: { message: "Service Unavailable" }, headers: {} };
    if (m.flavour === "primary") {
      const reset = Math.ceil(Date.now() / 1000) + m.retryAfterS;
      return {
        status: 403,
        body: PRIMARY_RATE_LIMIT_BODY,
        headers: {
          "x-ratelimit-limit": "5000",
          "x-ratelimit-remaining": "0",
          "x-ratelimit-used": "5000",
          "x-ratelimit-reset": String(reset),
          "x-ratelimit-resource": "core",
        },
      };
    }
    return { status: m.status, body: SECONDARY_RATE_LIMIT_BODY, headers: { "retry-after": String(m.retryAfterS) } };
  }

  type Answer = { status: number; body: unknown; headers?: Record<string, string> };

  async function route(method: string, u: URL, auth: string | null, body: unknown): Promise<Answer> {
    const p = u.pathname;
    let m = /^\/app\/installations\/(\d+)\/access_tokens$/.exec(p);
    if (m && method === "POST") {
      if (!(await appAuthorised(auth))) return { status: 401, body: BAD_CREDENTIALS_BODY };
      const token = `ghs_${randomBytes(18).toString("hex")}`;
      const expiresAt = Date.now() + (opts.installationTokenTtlS ?? 3600) * 1000;
      installationTokens.set(token, { installationId: Number(m[1]), expiresAt });
      return {
        status: 201,
        body: installationTokenExample(token, new Date(expiresAt).toISOString().replace(/\.\d+Z$/, "Z")),
      };
    }
    if (p === "/app/hook/deliveries" && method === "GET") {
      if (!(await appAuthorised(auth))) return { status: 401, body: BAD_CREDENTIALS_BODY };
      return listDeliveries(u, "app");
    }
    m = /^\/app\/hook\/deliveries\/(\d+)\/attempts$/.exec(p);
    if (m && method === "POST") {
      if (!(await appAuthorised(auth))) return { status: 401, body: BAD_CREDENTIALS_BODY };
      return redeliver(Number(m[1]), "app");
    }
    m = /^\/repos\/([^/]+\/[^/]+?)(?:\/(.*))?$/.exec(p);
    const repo = m?.[1] ? repos.get(decodeURIComponent(m[1]).toLowerCase()) : undefined;
    if (!m || !repo) return { status: 404, body: NOT_FOUND_BODY };
    const rest = m[2] ?? "";
    const api = url;
    // "Get a repository installation for the authenticated app": App JWT; 404 when not installed.
    if (rest === "installation" && method === "GET") {
      if (!(await appAuthorised(auth))) return { status: 401, body: BAD_CREDENTIALS_BODY };
      if (!repo.installationId) return { status: 404, body: NOT_FOUND_BODY };
      return { status: 200, body: installationExample(api, repo.installationId, repo.fullName.split("/")[0] ?? "") };
    }
    if (!repoAuthorised(repo, auth)) return { status: 401, body: BAD_CREDENTIALS_BODY };
    // "Get a repository": its canonical name and id; `permissions` as the caller's token has them.
    if (rest === "" && method === "GET") {
      const push = !!repo.token && auth?.endsWith(` ${repo.token}`) === true && repo.tokenCanPush !== false;
      return {
        status: 200,
        body: repositoryExample(api, repo.fullName, repo.repositoryId ?? EXAMPLE_REPOSITORY_ID, {
          admin: false,
          push,
          pull: true,
        }),
      };
    }
    let s = /^statuses\/([0-9a-f]{40,64})$/.exec(rest);
    if (s?.[1] && method === "POST") {
      const b = body as { state?: string; description?: string; target_url?: string; context?: string };
      if (!b || !["pending", "success", "failure", "error"].includes(b.state ?? ""))
        return {
          status: 422,
          body: { message: "Validation Failed", documentation_url: "https://docs.github.com/rest" },
        };
      if (b.description && [...b.description].length > 140)
        return {
          status: 422,
          body: { message: "Validation Failed: description is too long (maximum is 140 characters)" },
        };
      const rec: StatusRecord = {
        sha: s[1],
        state: b.state ?? "pending",
        description: b.description ?? null,
        target_url: b.target_url ?? null,
        context: b.context ?? "default",
        at: Date.now(),
      };
      const list = repo.statuses.get(s[1]) ?? [];
      list.push(rec);
      repo.statuses.set(s[1], list);
      const at = new Date(rec.at).toISOString().replace(/\.\d+Z$/, "Z");
      return { status: 201, body: commitStatusExample(api, repo.fullName, s[1], { ...rec, id: nextId++, at }) };
    }
    if (rest === "check-runs" && method === "POST") {
      const b = body as Partial<CheckRunRecord> & { output?: CheckRunRecord["output"] };
      const rec: CheckRunRecord = {
        id: nextId++,
        repo: repo.fullName,
        name: b.name ?? "",
        head_sha: b.head_sha ?? "",
        status: b.status ?? "queued",
        conclusion: b.conclusion ?? null,
        details_url: b.details_url ?? null,
        external_id: b.external_id ?? null,
        output: { title: b.output?.title ?? null, summary: b.output?.summary ?? null, text: b.output?.text ?? null },
        updates: 0,
      };
      checkRuns.push(rec);
      return { status: 201, body: checkRunBody(rec) };
    }
    s = /^check-runs\/(\d+)$/.exec(rest);
    if (s?.[1] && method === "PATCH") {
      const rec = checkRuns.find((c) => c.id === Number(s?.[1]) && c.repo === repo.fullName);
      if (!rec) return { status: 404, body: NOT_FOUND_BODY };
      const b = body as Partial<CheckRunRecord>;
      if (b.status) rec.status = b.status;
      if (b.conclusion !== undefined) rec.conclusion = b.conclusion;
      if (b.output) rec.output = { ...rec.output, ...b.output };
      if (b.details_url) rec.details_url = b.details_url;
      rec.updates++;
      return { status: 200, body: checkRunBody(rec) };
    }
    if (rest === "hooks" && method === "GET") {
      const hooks = repo.hook
        ? [repoHookExample(api, repo.fullName, { ...repo.hook, events: ["push", "pull_request"] })]
        : [];
      return { status: 200, body: hooks };
    }
    s = /^hooks\/(\d+)\/deliveries$/.exec(rest);
    if (s?.[1] && method === "GET") {
      if (repo.hook?.id !== Number(s[1])) return { status: 404, body: NOT_FOUND_BODY };
      return listDeliveries(u, `repo:${repo.fullName}`);
    }
    s = /^hooks\/(\d+)\/deliveries\/(\d+)\/attempts$/.exec(rest);
    if (s?.[1] && s[2] && method === "POST") {
      if (repo.hook?.id !== Number(s[1])) return { status: 404, body: NOT_FOUND_BODY };
      return redeliver(Number(s[2]), `repo:${repo.fullName}`);
    }
    return { status: 404, body: NOT_FOUND_BODY };
  }

  function checkRunBody(rec: CheckRunRecord) {
    return checkRunExample(url, rec.repo, {
      ...rec,
      started_at: "2018-05-04T01:14:52Z",
      completed_at: rec.status === "completed" ? "2018-05-04T01:14:52Z" : null,
    });
  }

  function repoAuthorised(repo: FakeRepo, auth: string | null): boolean {
    const token = /^(?:token|Bearer) (\S+)$/.exec(auth ?? "")?.[1];
    if (!token) return false;
    if (repo.token && token === repo.token) return true;
    const inst = installationTokens.get(token);
    return !!inst && inst.expiresAt > Date.now() && inst.installationId === repo.installationId;
  }

  async function appAuthorised(auth: string | null): Promise<boolean> {
    const jwt = /^Bearer (\S+)$/.exec(auth ?? "")?.[1];
    if (!jwt || !appKey || !opts.app) return false;
    try {
      const { payload } = await jwtVerify(jwt, appKey, { algorithms: ["RS256"], clockTolerance: 60 });
      // GitHub: iss is the App's id (or client id); the token may live at most ten minutes.
      const lifetime = (payload.exp ?? 0) - (payload.iat ?? 0);
      return String(payload.iss) === String(opts.app.id) && lifetime > 0 && lifetime <= 600;
    } catch {
      return false;
    }
  }

  /** Newest first, `per_page` (max 100) per page, `cursor` = where the page starts; Link rel="next". */
  function listDeliveries(u: URL, hookKey: string): Answer {
    const perPage = Math.min(100, Math.max(1, Number(u.searchParams.get("per_page") ?? "30")));
    const cursor = u.searchParams.get("cursor");
    const startBelow = cursor ? Number(/^v1_(\d+)$/.exec(cursor)?.[1] ?? "0") : Number.POSITIVE_INFINITY;
    const all = deliveries.filter((d) => d.hookKey === hookKey).sort((a, b) => b.id - a.id);
    const from = all.filter((d) => d.id <= startBelow);
    const page = from.slice(0, perPage);
    const next = from[perPage];
    const headers: Record<string, string> = {};
    if (next) {
      const nu = new URL(u.toString());
      nu.searchParams.set("cursor", `v1_${next.id}`);
      headers.link = `<${nu.toString()}>; rel="next"`;
    }
    return { status: 200, body: page.map(({ hookKey: _k, body: _b, ...item }) => item), headers };
  }

  function redeliver(id: number, hookKey: string): Answer {
    const d = deliveries.find((x) => x.id === id && x.hookKey === hookKey);
    if (!d) return { status: 404, body: NOT_FOUND_BODY };
    // GitHub answers 202 at once and makes the new delivery (same GUID, redelivery: true) afterwards.
    setTimeout(
      () => void send_(d.hookKey, d.event, d.action, d.body, d.guid, true, d.installation_id, d.repository_id),
      10,
    );
    return { status: 202, body: {} };
  }

  function hookOf(hookKey: string): { url: string; secret: string } | null {
    if (hookKey === "app") return opts.app?.hook ?? null;
    return repos.get(hookKey.slice("repo:".length).toLowerCase())?.hook ?? null;
  }

  async function send_(
    hookKey: string,
    event: string,
    action: string | null,
    body: string,
    guid: string,
    redelivery: boolean,
    installationId: number | null,
    repositoryId: number | null,
  ): Promise<{ id: number; statusCode: number }> {
    const hook = hookOf(hookKey);
    const id = nextDeliveryId++;
    const started = Date.now();
    let statusCode = 502;
    let status = "failed to connect";
    if (hook) {
      try {
        const r = await fetch(hook.url, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            "user-agent": "GitHub-Hookshot/fake",
            "x-github-event": event,
            "x-github-delivery": guid,
            "x-github-hook-id": String(
              hookKey === "app" ? 0 : (repos.get(hookKey.slice(5).toLowerCase())?.hook?.id ?? 0),
            ),
            "x-hub-signature-256": await sign(hook.secret, body),
          },
          body,
          signal: AbortSignal.timeout(10_000),
        });
        await r.arrayBuffer();
        statusCode = r.status;
        status = r.ok ? "OK" : `Invalid HTTP Response: ${r.status}`;
      } catch {
        // Kiln unreachable: recorded as GitHub records it, to be found by the deliveries list.
      }
    }
    deliveries.push({
      id,
      guid,
      delivered_at: new Date(started).toISOString().replace(/\.\d+Z$/, "Z"),
      redelivery,
      duration: (Date.now() - started) / 1000,
      status,
      status_code: statusCode,
      event,
      action,
      installation_id: installationId,
      repository_id: repositoryId,
      throttled_at: null,
      hookKey,
      body,
    });
    return { id, statusCode };
  }

  return {
    url,
    requests,
    addRepo(fullName, o) {
      repos.set(fullName.toLowerCase(), { ...o, fullName, statuses: new Map() });
    },
    statuses: (fullName, sha) => [...(repos.get(fullName.toLowerCase())?.statuses.get(sha) ?? [])],
    latestStatuses(fullName, sha) {
      const out = new Map<string, StatusRecord>();
      for (const s of repos.get(fullName.toLowerCase())?.statuses.get(sha) ?? []) out.set(s.context, s);
      return out;
    },
    checkRuns: (fullName) => checkRuns.filter((c) => c.repo === fullName),
    fail(o = {}) {
      mode = { kind: "fail", status: o.status ?? 503, remaining: o.times ?? null };
    },
    rateLimit(o) {
      mode = {
        kind: "rate_limit",
        flavour: o.flavour,
        status: o.status ?? (o.flavour === "primary" ? 403 : 429),
        retryAfterS: o.retryAfterS,
        remaining: o.times ?? null,
        pathIncludes: o.pathIncludes ?? null,
      };
    },
    recover() {
      mode = { kind: "ok" };
    },
    async deliver(fullName, event, payload) {
      const repo = repos.get(fullName.toLowerCase());
      if (!repo) throw new Error(`fake forge: unknown repo ${fullName}`);
      const hookKey = repo.hook ? `repo:${fullName}` : "app";
      const guid = randomUUID();
      const installation = repo.installationId ?? null;
      const body = JSON.stringify(
        installation && hookKey === "app" ? { ...payload, installation: { id: installation } } : payload,
      );
      const action = typeof payload.action === "string" ? payload.action : null;
      const r = await send_(hookKey, event, action, body, guid, false, installation, repo.repositoryId ?? null);
      return { guid, ...r };
    },
    deliveries(fullName) {
      const key = fullName === null ? "app" : `repo:${fullName}`;
      return deliveries.filter((d) => d.hookKey === key).map(({ hookKey: _k, body: _b, ...item }) => item);
    },
    installationTokensIssued: () => installationTokens.size,
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = status === 204 ? "" : JSON.stringify(body);
  res.writeHead(status, {
    "content-type": "application/json; charset=utf-8",
    "x-github-api-version-selected": "2022-11-28",
    "x-github-request-id": randomUUID().toUpperCase(),
    ...headers,
  });
  res.end(text);
}
