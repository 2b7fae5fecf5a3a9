// The sandbox's ID token endpoint from the hostile side, over the real egress proxy listeners and
// real curl: another attempt's request token, none, a wrong one, another path, another method, a
// closed attempt, and the absolute-form a proxy-honouring client sends. The control plane here is
// a recorder standing in for the web server's id-token route (its own behaviour is tested against
// real PostgreSQL in packages/engine/test/id-tokens.test.ts and e2e/id-tokens.test.ts): what these
// cases prove is that nothing but the attempt's own, live request token reaches it, with that
// attempt's job token.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@kiln/logger";
import { ControlClient, type JobTicket } from "../control-client.ts";
import { EgressProxy, egressProxyEnv, SANDBOX_PROXY_AUTHORITIES } from "../egress/index.ts";
import { GUEST_PROXY_URL, SANDBOX_PROXY_URL } from "../sandboxes/index.ts";
import { ID_TOKEN_PATH, openIdTokenEndpoint } from "./id-token-endpoint.ts";

const run = promisify(execFile);
const quiet = createLogger({}, () => undefined);
const calls: { path: string; auth: string; body: string }[] = [];
let control: http.Server;
let client: ControlClient;

beforeAll(async () => {
  control = http.createServer((req, res) => {
    let body = "";
    req.on("data", (b: Buffer) => (body += b.toString()));
    req.on("end", () => {
      calls.push({ path: req.url ?? "", auth: req.headers.authorization ?? "", body });
      const stale = req.headers.authorization === "Bearer kjt_stale";
      const untrusted = req.headers.authorization === "Bearer kjt_untrusted";
      res.writeHead(stale ? 409 : untrusted ? 403 : 200, { "content-type": "application/json" });
      res.end(
        JSON.stringify(
          stale
            ? { error: { code: "ATTEMPT.STALE_EPOCH", message: "stale" } }
            : untrusted
              ? { error: { code: "ID_TOKEN.UNTRUSTED_REFUSED", message: "untrusted runs get no ID token" } }
              : { value: `jwt-for-${JSON.parse(body).audience}`, expires_at: new Date().toISOString() },
        ),
      );
    });
  });
  await new Promise<void>((r) => control.listen(0, "127.0.0.1", () => r()));
  client = new ControlClient(`http://127.0.0.1:${(control.address() as AddressInfo).port}`, "host-cred");
});
afterAll(() => control.close());

function ticket(jobToken: string): JobTicket {
  return { jobId: randomUUID(), attemptId: randomUUID(), epoch: 3, jobToken, trustClass: "trusted" } as JobTicket;
}

async function openFor(proxy: EgressProxy, jobToken: string) {
  const tk = ticket(jobToken);
  const endpoint = openIdTokenEndpoint({ client, ticket: tk, log: quiet });
  const listener = await proxy.open({
    attemptId: tk.attemptId,
    trustClass: "trusted",
    listen: "unix",
    policy: { trustClass: "trusted", allowList: [] },
    onDecision: () => undefined,
    onDenied: () => undefined,
    idTokens: endpoint,
  });
  const socket = (listener.address as { path: string }).path;
  /** curl inside "the sandbox": status and body. */
  const get = async (url: string, token: string | null, extra: string[] = []) => {
    const args = ["-s", "-o", "-", "-w", "\n%{http_code}", "--unix-socket", socket, ...extra];
    if (token !== null) args.push("-H", `Authorization: Bearer ${token}`);
    const { stdout } = await run("curl", [...args, url]);
    const i = stdout.lastIndexOf("\n");
    return { status: Number(stdout.slice(i + 1)), body: stdout.slice(0, i) };
  };
  return { tk, endpoint, listener, get, socket };
}

describe("the sandbox's ID token endpoint", () => {
  const proxy = new EgressProxy({
    socketDir: path.join(os.tmpdir(), `kiln-idt-${process.pid}`),
    allowInternalAddresses: false,
    logger: quiet,
  });
  afterAll(() => proxy.close());
  const URL_ = `http://127.0.0.1:3128${ID_TOKEN_PATH}?audience=aud.example`;

  it("mints for the attempt's own request token, with that attempt's job token and epoch", async () => {
    const a = await openFor(proxy, "kjt_a");
    calls.length = 0;
    const r = await a.get(URL_, a.endpoint.requestToken);
    expect(r).toEqual({ status: 200, body: JSON.stringify({ value: "jwt-for-aud.example" }) });
    expect(calls).toEqual([
      {
        path: `/v1/agent/jobs/${a.tk.jobId}/id-token`,
        auth: "Bearer kjt_a",
        body: JSON.stringify({ epoch: 3, audience: "aud.example" }),
      },
    ]);
    // A proxy-honouring client sends absolute-form to the proxy's own address: same endpoint.
    const abs = await a.get(`http://10.0.2.100:3128${ID_TOKEN_PATH}?audience=x`, a.endpoint.requestToken, [
      "--proxy",
      "http://10.0.2.100:3128",
    ]);
    expect(abs.status).toBe(200);
    await a.listener.close();
  });

  it("refuses every hostile request before the control plane hears of it", async () => {
    const a = await openFor(proxy, "kjt_a");
    const b = await openFor(proxy, "kjt_b");
    calls.length = 0;
    // Attempt b's token on attempt a's listener, and a's on b's.
    expect((await a.get(URL_, b.endpoint.requestToken)).status).toBe(401);
    expect((await b.get(URL_, a.endpoint.requestToken)).status).toBe(401);
    expect((await a.get(URL_, null)).status).toBe(401);
    expect((await a.get(URL_, `${a.endpoint.requestToken}x`)).status).toBe(401);
    expect((await a.get(URL_, "kjt_a")).status).toBe(401); // the job token is not a request token
    // The right token, but for another path or method, or without an audience.
    expect(
      (await a.get("http://127.0.0.1:3128/v1/agent/jobs/x/id-token?audience=a", a.endpoint.requestToken)).status,
    ).toBe(404);
    expect(
      (
        await a.get(`http://127.0.0.1:3128${ID_TOKEN_PATH}/../secrets?audience=a`, a.endpoint.requestToken, [
          "--path-as-is",
        ])
      ).status,
    ).toBe(404);
    expect((await a.get(URL_, a.endpoint.requestToken, ["-X", "POST"])).status).toBe(405);
    expect((await a.get(`http://127.0.0.1:3128${ID_TOKEN_PATH}`, a.endpoint.requestToken)).status).toBe(400);
    expect((await a.get(`http://127.0.0.1:3128${ID_TOKEN_PATH}?audience=a%20b`, a.endpoint.requestToken)).status).toBe(
      400,
    );
    expect(calls).toEqual([]);
    // Once the attempt is over its own token is refused here too, and then the listener is gone.
    a.endpoint.close();
    expect((await a.get(URL_, a.endpoint.requestToken)).status).toBe(409);
    await a.listener.close();
    await expect(a.get(URL_, a.endpoint.requestToken)).rejects.toMatchObject({ code: 7 });
    expect(calls).toEqual([]);
    await b.listener.close();
  });

  it("passes the control plane's refusal of a stale attempt on as 409", async () => {
    const s = await openFor(proxy, "kjt_stale");
    expect((await s.get(URL_, s.endpoint.requestToken)).status).toBe(409);
    await s.listener.close();
  });

  it("passes the refusal of an untrusted run's token on as 403 with its code, not as an outage to retry", async () => {
    const s = await openFor(proxy, "kjt_untrusted");
    const r = await s.get(URL_, s.endpoint.requestToken);
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body)).toMatchObject({ code: "ID_TOKEN.UNTRUSTED_REFUSED" });
    await s.listener.close();
  });

  it("is advertised at the proxy address each driver's sandbox sees, which is never proxied", () => {
    for (const proxyUrl of [SANDBOX_PROXY_URL, GUEST_PROXY_URL]) {
      const env = egressProxyEnv(proxyUrl);
      const u = new URL(env.KILN_ID_TOKEN_URL ?? "");
      expect(SANDBOX_PROXY_AUTHORITIES.has(u.host)).toBe(true);
      expect(u.pathname).toBe(ID_TOKEN_PATH);
      expect(env.NO_PROXY?.split(",")).toContain(u.hostname);
    }
  });
});
