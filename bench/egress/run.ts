// Mediated egress overhead (issue 3, docs/adr/0013-mediated-egress.md), one run, one machine:
//   request latency: a small GET from this process to a local HTTP server, a new connection each
//     time (what a build tool without keep-alive does), direct vs through the host egress proxy
//     (absolute-form HTTP, and CONNECT + the same request inside the tunnel);
//   step start: `true` as a process-driver step, without egress (empty network namespace) vs with
//     the in-namespace forwarder (one perl exec: loopback up, listen, fork), which every step now pays.
// Usage: npm run bench -- egress [--requests 300] [--steps 20]
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import net, { type AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { EgressProxy } from "@kiln/host-agent/egress";
import { createLogger } from "@kiln/logger";
import { createProcessDriver } from "@kiln/host-agent/sandboxes";
import { ms, percentile } from "../lib/stats.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const REQUESTS = Number(arg("requests", "300"));
const STEPS = Number(arg("steps", "20"));

function get(port: number, requestPath: string, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path: requestPath, headers: { host }, agent: false }, (res) => {
      res.resume();
      res.once("end", () => resolve());
    });
    req.once("error", reject);
    req.end();
  });
}

/** CONNECT through the proxy, then the same GET inside the tunnel. */
function tunnelled(proxyPort: number, target: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(proxyPort, "127.0.0.1", () =>
      s.write(`CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`),
    );
    let buf = "";
    let tunnel = false;
    s.on("data", (b) => {
      buf += b.toString("latin1");
      if (!tunnel && buf.includes("\r\n\r\n")) {
        if (!buf.startsWith("HTTP/1.1 200")) return reject(new Error(buf));
        tunnel = true;
        buf = "";
        s.write(`GET / HTTP/1.1\r\nHost: ${target}\r\nConnection: close\r\n\r\n`);
      }
    });
    s.once("end", () => (tunnel ? resolve() : reject(new Error("closed"))));
    s.once("error", reject);
  });
}

async function timeEach(n: number, fn: () => Promise<unknown>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

const row = (name: string, xs: number[]) =>
  console.log(
    `${name.padEnd(44)} p50 ${ms(percentile(xs, 50)).padStart(9)}  p95 ${ms(percentile(xs, 95)).padStart(9)}  (n=${xs.length})`,
  );

const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-egress-"));
const server = http.createServer((_req, res) => res.end("ok"));
await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
const port = (server.address() as AddressInfo).port;
const target = `localhost:${port}`;
const proxy = new EgressProxy({
  socketDir: path.join(dir, "sock"),
  allowInternalAddresses: true,
  logger: createLogger({}, () => undefined),
});
const policy = { trustClass: "trusted" as const, allowList: [target] };
const attempt = await proxy.open({
  attemptId: randomUUID(),
  trustClass: "trusted",
  listen: "tcp",
  policy,
  onDecision: () => undefined,
  onDenied: () => undefined,
});
const proxyPort = (attempt.address as { port: number }).port;
try {
  // Interleaved rounds so load changes on the machine hit both sides alike.
  const direct: number[] = [];
  const viaProxy: number[] = [];
  const viaConnect: number[] = [];
  for (let round = 0; round < 3; round++) {
    direct.push(...(await timeEach(REQUESTS / 3, () => get(port, "/", target))));
    viaProxy.push(...(await timeEach(REQUESTS / 3, () => get(proxyPort, `http://${target}/`, target))));
    viaConnect.push(...(await timeEach(REQUESTS / 3, () => tunnelled(proxyPort, target))));
  }
  console.log(`egress proxy overhead, ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}`);
  row("GET, new connection, direct", direct);
  row("GET, new connection, via proxy (HTTP)", viaProxy);
  row("GET, new connection, via proxy (CONNECT)", viaConnect);

  const driver = await createProcessDriver({ workDir: path.join(dir, "work") });
  // Two sandboxes side by side, steps alternating between them, so load hits both alike.
  const plainId = randomUUID();
  const fwdId = randomUUID();
  const fwdListener = await proxy.open({
    attemptId: fwdId,
    trustClass: "trusted",
    listen: "unix",
    policy,
    onDecision: () => undefined,
    onDenied: () => undefined,
  });
  const plainBox = await driver.create({ attemptId: plainId, image: null });
  const fwdBox = await driver.create({ attemptId: fwdId, image: null });
  const plain: number[] = [];
  const forwarded: number[] = [];
  const step = (box: typeof plainBox) =>
    box.runStep(
      "true",
      { PATH: "/usr/bin:/bin" },
      {},
      () => undefined,
      () => undefined,
    );
  for (let i = 0; i < STEPS * 2; i++) {
    plain.push((await step(plainBox)).durationMs);
    forwarded.push((await step(fwdBox)).durationMs);
  }
  // The first egress step also starts the sandbox's forwarder (once per job).
  const firstStep = forwarded.shift() ?? 0;
  await plainBox.destroy();
  await fwdBox.destroy();
  await fwdListener.close();
  console.log(`process-driver step \`true\` (${driver.isolation.detail})`);
  row("step, no egress (empty net namespace)", plain);
  row("step, egress (held netns + forwarder)", forwarded);
  console.log(`first egress step, incl. starting the forwarder: ${ms(firstStep)}`);
} finally {
  await attempt.close();
  await proxy.close();
  server.close();
  await rm(dir, { recursive: true, force: true });
}
