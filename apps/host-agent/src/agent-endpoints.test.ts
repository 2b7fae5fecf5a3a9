import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { AGENT_ENDPOINTS, agentEndpointPath, matchAgentEndpoint, type AgentEndpointName } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { ControlClient } from "./control-client.ts";

// The agent protocol's endpoint table (ADR 0038) against both sides: every web agent route is an
// endpoint of the table and takes its path, auth and schemas from it; every call the agent makes
// goes through the table; nothing on either side is outside it.
const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const WEB_AGENT = path.join(ROOT, "apps/web/src/app/v1/agent");
/** Served beside the protocol, not part of it: the document describing it. */
const NOT_PROTOCOL = new Set(["/v1/agent/openapi.json"]);

function routeFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? routeFiles(path.join(dir, e.name)) : e.name === "route.ts" ? [path.join(dir, e.name)] : [],
  );
}

/** `jobs/[jobId]/heartbeat` -> `/v1/agent/jobs/{job_id}/heartbeat`, the table's form. */
function tablePathOf(file: string): string {
  const rel = path.relative(WEB_AGENT, path.dirname(file)).split(path.sep);
  const segs = rel.map((s) =>
    s.replace(/^\[(\w+)\]$/, (_, n: string) => `{${n.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}}`),
  );
  return `/v1/agent/${segs.join("/")}`;
}

const names = Object.keys(AGENT_ENDPOINTS) as AgentEndpointName[];

describe("the agent protocol endpoint table", () => {
  it("every web agent route is an endpoint of the table, derived from it; every endpoint has its route", () => {
    const routed = new Set<AgentEndpointName>();
    for (const file of routeFiles(WEB_AGENT)) {
      const p = tablePathOf(file);
      if (NOT_PROTOCOL.has(p)) continue;
      const name = names.find((n) => AGENT_ENDPOINTS[n].path === p);
      expect(name, `${p} (${file}) is not in the agent endpoint table`).toBeDefined();
      if (!name) continue;
      routed.add(name);
      const e = AGENT_ENDPOINTS[name];
      const src = readFileSync(file, "utf8");
      expect(src, `${file} exports ${e.method}`).toContain(`export const ${e.method} = route(`);
      // Path, credential and response schema come from the table, never a copy.
      for (const field of ["path", "auth", "response"])
        expect(src, `${file}: ${field}`).toContain(`AGENT_ENDPOINTS.${name}.${field}`);
      expect(src, `${file}: status`).toMatch(new RegExp(`responses: \\{\\s*${e.status}: `));
      expect(src).not.toContain("agentProtocol.");
      if (e.body === "json") expect(src, `${file}: body`).toContain(`body: AGENT_ENDPOINTS.${name}.request`);
      else
        expect(readFileSync(path.join(path.dirname(file), "_lib/parse-chunk-batch.ts"), "utf8")).toContain(
          `AGENT_ENDPOINTS.${name}.request`,
        );
    }
    expect([...routed].sort()).toEqual([...names].sort());
  });

  it("the agent calls only endpoints of the table, and every one of them", async () => {
    const src = readFileSync(fileURLToPath(new URL("./control-client.ts", import.meta.url)), "utf8");
    const register = readFileSync(fileURLToPath(new URL("./registration/register.ts", import.meta.url)), "utf8");
    expect(src).not.toMatch(/["`]\/v1\//);
    expect(register).not.toMatch(/["`]\/v1\//);
    const used = new Set([...`${src}\n${register}`.matchAll(/AGENT_ENDPOINTS\.(\w+)/g)].map((m) => m[1]));
    expect([...used].sort()).toEqual([...names].sort());

    // Each request the client sends names a table endpoint, with the credential the table says.
    const seen: { method: string; path: string; auth: string }[] = [];
    const client = new ControlClient("http://control.invalid/", "kagent_host", async (input, init) => {
      const url = new URL(String(input));
      const auth = new Headers(init?.headers).get("authorization") ?? "";
      seen.push({ method: init?.method ?? "GET", path: url.pathname, auth });
      return new Response(JSON.stringify({ error: { code: "TEST.UNAVAILABLE", message: "no server" } }), {
        status: 503,
      });
    });
    const opts = { timeoutMs: 1_000 };
    const job = "8c0f6f0e-8f5c-4d8e-9a37-1f1f0b0c7a11";
    const r = await client.heartbeat(job, "jwt-of-job", { epoch: 1 }, opts);
    expect(r).toMatchObject({ ok: false, kind: "http", status: 503, code: "TEST.UNAVAILABLE" });
    await client.claim({ session_id: job, claim_request_id: job, wait_ms: 0 }, opts);
    await client.fetchSecrets(job, "jwt-of-job", 1, opts);
    await client.completeCacheSave(job, "jwt-of-job", "entry/1", 1, opts);
    expect(seen).toEqual([
      { method: "POST", path: `/v1/agent/jobs/${job}/heartbeat`, auth: "Bearer jwt-of-job" },
      { method: "POST", path: "/v1/agent/claims", auth: "Bearer kagent_host" },
      { method: "POST", path: `/v1/agent/jobs/${job}/secrets`, auth: "Bearer jwt-of-job" },
      { method: "POST", path: `/v1/agent/jobs/${job}/caches/saves/entry%2F1/complete`, auth: "Bearer jwt-of-job" },
    ]);
    for (const s of seen) expect(matchAgentEndpoint(s.method, s.path), s.path).not.toBeNull();
  });

  it("a request the table's schema refuses never leaves the agent", () => {
    const client = new ControlClient("http://control.invalid", "kagent_host", () => {
      throw new Error("sent");
    });
    expect(() => client.fetchSecrets("j", "t", 0, { timeoutMs: 1_000 })).toThrow();
  });

  it("paths round-trip: filled by the client, matched by the table, nothing outside it", () => {
    for (const n of names) {
      const params = { job_id: "j 1", session_id: "s", generation_id: "g", entry_id: "e" };
      const p = agentEndpointPath(AGENT_ENDPOINTS[n], params);
      const m = matchAgentEndpoint("POST", p);
      expect(m?.name).toBe(n);
      if (AGENT_ENDPOINTS[n].path.includes("{job_id}")) expect(m?.params.job_id).toBe("j 1");
    }
    expect(matchAgentEndpoint("POST", "/v1/agent/jobs/x/unknown")).toBeNull();
    expect(matchAgentEndpoint("GET", "/v1/agent/claims")).toBeNull();
    expect(() => agentEndpointPath(AGENT_ENDPOINTS.heartbeat, {})).toThrow(/job_id/);
  });
});
