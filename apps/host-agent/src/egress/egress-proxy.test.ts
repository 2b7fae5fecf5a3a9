// The host egress proxy against real sockets and real curl: per-attempt listeners, the ticket's
// policy, named denials (403 + X-Kiln-Egress + the job-log line), CONNECT and plain HTTP, framed
// answers (guestfwd never passes a close), and the process driver's in-namespace forwarder.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@kiln/logger";
import { findForwarderTools, probeNamespaces, ProcessDriver } from "../sandboxes/index.ts";
import { EgressProxy, isInternalDestination, type EgressDecisionEvent } from "./egress-proxy.ts";
import { egressEndpointFor, egressSocketFor } from "./egress-registry.ts";

const curl = promisify(execFile);
const quiet = createLogger({}, () => undefined);
const servers: http.Server[] = [];
let dir = "";
let allowed = 0;
let other = 0;

function serve(handler: http.RequestListener): Promise<number> {
  const s = http.createServer(handler);
  servers.push(s);
  return new Promise((resolve) => s.listen(0, "127.0.0.1", () => resolve((s.address() as AddressInfo).port)));
}

beforeAll(async () => {
  if (!existsSync("/usr/bin/curl")) throw new Error("these tests need Debian's curl (.ci/run installs it)");
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-egress-"));
  // No Content-Length: the proxy must re-frame this body (chunked), not end it with a close.
  allowed = await serve((req, res) => {
    res.write(`hello ${req.headers.host}`);
    res.end();
  });
  other = await serve((_req, res) => res.end("other"));
});
afterAll(async () => {
  for (const s of servers) s.close();
  await rm(dir, { recursive: true, force: true });
});

function openAttempt(proxy: EgressProxy, trustClass: "trusted" | "untrusted", listen: "tcp" | "unix" = "tcp") {
  const decisions: EgressDecisionEvent[] = [];
  const denials: string[] = [];
  const attemptId = randomUUID();
  const opened = proxy.open({
    attemptId,
    trustClass,
    listen,
    policy: { trustClass, allowList: [`localhost:${allowed}`] },
    onDecision: (e) => decisions.push(e),
    onDenied: (line) => denials.push(line),
  });
  return { attemptId, opened, decisions, denials };
}

async function processesMentioning(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, "utf8").catch(() => "");
    if (cmdline.includes(text)) found.push(Number(entry));
  }
  return found;
}

/** Sends raw bytes, returns everything received until the proxy closes (denials close). */
function raw(port: number, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => s.write(request));
    let out = "";
    s.on("data", (b) => (out += b.toString("latin1")));
    s.on("end", () => resolve(out));
    s.on("error", reject);
  });
}

describe("EgressProxy (TCP listener, the microvm driver's guestfwd target)", () => {
  const proxy = new EgressProxy({
    socketDir: path.join(os.tmpdir(), "kiln-egress-sock"),
    allowInternalAddresses: true,
    logger: quiet,
  });
  afterAll(() => proxy.close());

  it("relays allowed plain HTTP and CONNECT, denies the rest with the named error", async () => {
    const a = openAttempt(proxy, "trusted");
    const { port } = (await a.opened).address as { kind: "tcp"; port: number };
    expect(egressEndpointFor(a.attemptId)).toEqual({ port });
    const via = ["-sS", "-x", `http://127.0.0.1:${port}`, "--noproxy", ""];
    expect((await curl("curl", [...via, `http://localhost:${allowed}/x`])).stdout).toBe(`hello localhost:${allowed}`);
    expect((await curl("curl", [...via, "-p", `http://localhost:${allowed}/y`])).stdout).toBe(
      `hello localhost:${allowed}`,
    );
    const denied = await curl("curl", [...via, "-i", `http://localhost:${other}/`]);
    const line = `kiln egress denied: localhost:${other} is not allowed for trusted runs`;
    expect(denied.stdout).toMatch(/^HTTP\/1\.1 403/);
    expect(denied.stdout).toContain(`X-Kiln-Egress: ${line}`);
    expect(denied.stdout.trimEnd().endsWith(line)).toBe(true);
    await expect(curl("curl", [...via, "-p", `http://127.0.0.1:${allowed}/`])).rejects.toMatchObject({ code: 56 });
    expect(a.denials).toEqual([line, `kiln egress denied: 127.0.0.1:${allowed} is not allowed for trusted runs`]);
    expect(a.decisions).toEqual([
      { host: "localhost", port: allowed, decision: "allowed", reason: "allow_list" },
      { host: "localhost", port: allowed, decision: "allowed", reason: "allow_list" },
      { host: "localhost", port: other, decision: "denied", reason: "not_on_allow_list" },
      { host: "127.0.0.1", port: allowed, decision: "denied", reason: "not_on_allow_list" },
    ]);
    await (await a.opened).close();
    expect(egressEndpointFor(a.attemptId)).toBeNull();
  });

  it("frames every answer: denials carry Content-Length, relayed bodies without one are chunked", async () => {
    const a = openAttempt(proxy, "untrusted");
    const { port } = (await a.opened).address as { kind: "tcp"; port: number };
    const denial = await raw(port, `CONNECT localhost:${allowed} HTTP/1.1\r\nHost: localhost:${allowed}\r\n\r\n`);
    const [head, body] = denial.split("\r\n\r\n");
    expect(head).toMatch(/^HTTP\/1\.1 403 Forbidden/);
    expect(head).toContain(`Content-Length: ${Buffer.byteLength(body ?? "")}`);
    expect(body).toBe(`kiln egress denied: localhost:${allowed} is not allowed for untrusted runs\n`);
    expect(a.decisions).toEqual([{ host: "localhost", port: allowed, decision: "denied", reason: "untrusted_run" }]);
    await (await a.opened).close();

    const t = openAttempt(proxy, "trusted");
    const tport = ((await t.opened).address as { kind: "tcp"; port: number }).port;
    // Keep-alive request: the answer must be complete without the proxy closing the connection.
    const answer = await new Promise<string>((resolve, reject) => {
      const s = net.connect(tport, "127.0.0.1", () =>
        s.write(`GET http://localhost:${allowed}/ HTTP/1.1\r\nHost: localhost:${allowed}\r\n\r\n`),
      );
      let out = "";
      s.on("data", (b) => {
        out += b.toString("latin1");
        if (out.endsWith("0\r\n\r\n")) {
          s.destroy();
          resolve(out);
        }
      });
      s.on("error", reject);
      setTimeout(() => reject(new Error(`unframed answer: ${JSON.stringify(out)}`)), 10_000).unref();
    });
    expect(answer).toMatch(/^HTTP\/1\.1 200/);
    expect(answer.toLowerCase()).toContain("transfer-encoding: chunked");
    await (await t.opened).close();
  });

  it("an allowed name resolving to an internal address is denied unless the host allows it", async () => {
    const strict = new EgressProxy({ socketDir: dir, allowInternalAddresses: false, logger: quiet });
    const a = openAttempt(strict, "trusted");
    const { port } = (await a.opened).address as { kind: "tcp"; port: number };
    const r = await curl("curl", [
      "-sS",
      "-i",
      "-x",
      `http://127.0.0.1:${port}`,
      "--noproxy",
      "",
      `http://localhost:${allowed}/`,
    ]);
    expect(r.stdout).toMatch(/^HTTP\/1\.1 403/);
    expect(a.decisions).toEqual([{ host: "localhost", port: allowed, decision: "denied", reason: "internal_address" }]);
    await strict.close();
  });
});

describe("internal addresses (issue 28: one check, the outbound policy's)", () => {
  it.each([
    ["64:ff9b::7f00:1", true], // NAT64 of 127.0.0.1
    ["64:ff9b::a9fe:a9fe", true], // NAT64 of the metadata service
    ["198.18.0.1", true],
    ["198.19.255.254", true],
    ["192.0.0.1", true],
    ["::ffff:7f00:1", true], // IPv4-mapped 127.0.0.1, written in hex
    ["::ffff:a9fe:a9fe", true],
    ["0:0:0:0:0:ffff:a00:1", true],
    ["::ffff:127.0.0.1", true],
    ["169.254.169.254", true],
    ["fd00:ec2::254", true],
    ["100.64.0.1", true],
    ["127.0.0.1", true],
    ["not-an-address", true],
    ["8.8.8.8", false],
    ["2606:4700::1111", false],
    ["::ffff:808:808", false],
  ])("%s internal: %s", (address, internal) => {
    expect(isInternalDestination(address)).toBe(internal);
  });

  it("an allow-listed literal in 198.18.0.0/15 is refused by the proxy as internal", async () => {
    const strict = new EgressProxy({ socketDir: dir, allowInternalAddresses: false, logger: quiet });
    const decisions: EgressDecisionEvent[] = [];
    const opened = strict.open({
      attemptId: randomUUID(),
      trustClass: "trusted",
      listen: "tcp",
      policy: { trustClass: "trusted", allowList: ["198.18.0.1:80"] },
      onDecision: (e) => decisions.push(e),
      onDenied: () => {},
    });
    const { port } = (await opened).address as { kind: "tcp"; port: number };
    const answer = await raw(port, "CONNECT 198.18.0.1:80 HTTP/1.1\r\nHost: 198.18.0.1:80\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 403/);
    expect(decisions).toEqual([{ host: "198.18.0.1", port: 80, decision: "denied", reason: "internal_address" }]);
    await strict.close();
  });
});

describe("process driver: the step's only way out is the forwarder to its attempt's socket", () => {
  // Root agents hold one namespace per sandbox and enter it per step (nsenter); unprivileged ones
  // start the forwarder in each step's own namespace. Both are run here.
  it.each(["held namespace", "per-step forwarder"] as const)(
    "%s: reaches the allowed server through the proxy and nothing directly",
    async (mode) => {
      const namespaces = await probeNamespaces();
      const tools = await findForwarderTools();
      expect(namespaces.isolation.level, "these tests need network namespaces (unshare; CI runs as root)").toBe(
        "namespaces",
      );
      if ("missing" in tools) throw new Error(`missing ${tools.missing.join(", ")}`);
      expect(mode === "per-step forwarder" || tools.nsenter !== null, "util-linux nsenter is missing").toBe(true);
      const driver = new ProcessDriver(
        path.join(dir, `work-${mode.replace(/ /g, "-")}`),
        namespaces,
        mode === "held namespace" ? tools : { ...tools, nsenter: null },
      );
      await mkdir(path.join(dir, `work-${mode.replace(/ /g, "-")}`), { recursive: true });
      const proxy = new EgressProxy({ socketDir: path.join(dir, "sock"), allowInternalAddresses: true, logger: quiet });
      const a = openAttempt(proxy, "trusted", "unix");
      const listener = await a.opened;
      expect(egressSocketFor(a.attemptId)).toEqual({ path: (listener.address as { path: string }).path });
      const sandbox = await driver.create({ attemptId: a.attemptId, image: null });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      const script = [
        `echo "proxy=$HTTPS_PROXY"`,
        "unset NO_PROXY no_proxy",
        `curl -sS -f --max-time 20 http://localhost:${allowed}/ && echo`,
        `curl -sS -f --max-time 20 http://localhost:${other}/ || echo "other refused"`,
        `curl -sS --max-time 5 --noproxy '*' http://127.0.0.1:${other}/ || echo "direct refused"`,
      ].join("\n");
      const stepEnv = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: sandbox.paths.home };
      const result = await sandbox.runStep(
        script,
        stepEnv,
        {},
        (c) => out.push(c),
        (c) => err.push(c),
      );
      // A second step gets the same single way out (the held namespace is reused, not leaked).
      const again = await sandbox.runStep(
        `unset NO_PROXY no_proxy; curl -sS -f --max-time 20 http://localhost:${allowed}/again`,
        stepEnv,
        {},
        (c) => out.push(c),
        (c) => err.push(c),
      );
      await sandbox.destroy();
      await listener.close();
      await proxy.close();
      // Nothing of the forwarder outlives the sandbox (the held namespace's process included).
      const socketPath = (listener.address as { path: string }).path;
      const deadline = Date.now() + 5_000;
      while ((await processesMentioning(socketPath)).length > 0 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 100));
      expect(await processesMentioning(socketPath)).toEqual([]);
      const stdout = Buffer.concat(out).toString();
      expect(result.exitCode, Buffer.concat(err).toString()).toBe(0);
      expect(again.exitCode, Buffer.concat(err).toString()).toBe(0);
      expect(stdout).toContain("proxy=http://127.0.0.1:3128");
      expect(stdout).toContain(`hello localhost:${allowed}`);
      expect(stdout).toContain("other refused");
      expect(stdout).toContain("direct refused");
      expect(a.denials).toEqual([`kiln egress denied: localhost:${other} is not allowed for trusted runs`]);
    },
    60_000,
  );
});
