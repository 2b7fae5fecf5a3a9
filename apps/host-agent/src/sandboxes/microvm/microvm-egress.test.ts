// Mediated egress through a real microVM (docs/adr/0013-mediated-egress.md): the guest's one way
// out is guestfwd 10.0.2.100:3128 -> the per-connection relay -> the VM's egress link -> its
// attempt's proxy listener, judged by that attempt's policy. The host-side servers stand in for
// the world. The allowed one is reached (plain HTTP and a CONNECT tunnel), the other is denied with
// the named error and recorded, and nothing else leads out: not the host through the slirp gateway,
// not slirp's DNS, not another port on the proxy address, not an outside address. A VM whose attempt
// has no egress listener reaches nothing at all.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EgressProxy, type EgressDecisionEvent } from "../../egress/index.ts";
import { createLogger } from "@kiln/logger";
import { runCaptured, waitForNoProcesses } from "../sandbox-contract-support.ts";
import { createMicrovmDriver, type MicrovmDriver } from "./microvm-driver.ts";
import { netHelperArgs, qemuArgs } from "./qemu-command.ts";
import { MICROVM_TEST_SIZES } from "./microvm-test-sizes.ts";

const TIMEOUT_MS = 180_000;
// Shared with the contract test: content-addressed, so reusing it only saves the asset build.
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
const quiet = createLogger({}, () => undefined);
const servers: http.Server[] = [];
let workDir = "";
let driver: MicrovmDriver;
let proxy: EgressProxy;
let allowed = 0;
let other = 0;

function serve(handler: http.RequestListener): Promise<number> {
  const s = http.createServer(handler);
  servers.push(s);
  return new Promise((resolve) => s.listen(0, "127.0.0.1", () => resolve((s.address() as AddressInfo).port)));
}

// busybox nc in the guest (the base image has no curl). Its plain form half-closes the connection
// at the end of its stdin, which an HTTP proxy takes for a client that left (Node's server, like
// Squid's default); real clients (curl, git) do not, so the request is sent by a script nc runs with
// the connection as its stdin/stdout (-e), which keeps its side open until the answer has ended.
// Every request asks for a close, so an answer ends only when that close has come back through
// the relay.
const CLIENT = String.raw`
echo "proxy=$HTTP_PROXY"
printf '%s\n' 'printf "$REQ"; cat >&2' > /tmp/client.sh
send() { REQ="$1" timeout 30 nc 10.0.2.100 3128 -e sh /tmp/client.sh 2>&1; }
req() { send "GET http://$1/ HTTP/1.1\r\nHost: $1\r\nConnection: close\r\n\r\n"; }
tunnel() { send "CONNECT $1 HTTP/1.1\r\nHost: $1\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: $1\r\nConnection: close\r\n\r\n"; }
direct() { if printf '' | timeout 10 nc -w 5 "$1" "$2" >/dev/null 2>&1; then echo "direct $1:$2 reached"; else echo "direct $1:$2 blocked"; fi; }
`;

const PROBES = (allowedPort: number, otherPort: number) => String.raw`${CLIENT}
echo "--- allowed"; req localhost:${allowedPort}; echo
echo "--- tunnel"; tunnel localhost:${allowedPort}; echo
echo "--- other"; req localhost:${otherPort}; echo
echo "--- end"
direct 10.0.2.100 3128
direct 10.0.2.2 ${allowedPort}
direct 10.0.2.2 22
direct 10.0.2.3 53
direct 10.0.2.100 80
direct 1.1.1.1 80
`;

beforeAll(async () => {
  allowed = await serve((req, res) => res.end(`hello ${req.url} from the allowed server`));
  other = await serve((_req, res) => res.end("the other server"));
  workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-egress-"));
  proxy = new EgressProxy({ socketDir: path.join(workDir, ".egress"), allowInternalAddresses: true, logger: quiet });
  // A pool of one: the first sandbox is a restored snapshot, so the egress link is shown to work on
  // a VM that existed before its attempt did.
  driver = await createMicrovmDriver({
    workDir,
    assetsDir: ASSETS_DIR,
    warmPoolSize: 1,
    sizes: MICROVM_TEST_SIZES,
    accel: "auto",
    logger: quiet,
  });
}, TIMEOUT_MS);

afterAll(async () => {
  await driver?.close();
  await driver?.removeLeftovers();
  await proxy?.close();
  for (const s of servers) s.close();
  await rm(workDir, { recursive: true, force: true });
}, TIMEOUT_MS);

async function poolReady(): Promise<void> {
  const deadline = Date.now() + TIMEOUT_MS / 2;
  while (driver.stats.poolReady < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  expect(driver.stats.poolReady).toBe(1);
}

describe("microvm mediated egress", () => {
  it("the helper's netdev is restricted user-mode networking with exactly one guestfwd, a per-connection relay", () => {
    const relay = { perl: "/usr/bin/perl", script: "/vm/relay.pl", socket: "/vm/egress.sock" };
    const args = netHelperArgs(relay, "/w/vm-1");
    const netdevs = args.filter((_, i) => args[i - 1] === "-netdev");
    const user = netdevs.filter((n) => n.startsWith("user,"));
    expect(user).toHaveLength(1);
    expect(user[0]).toContain("restrict=on");
    expect(user[0]?.match(/guestfwd=/g)).toHaveLength(1);
    expect(args.join(" ")).not.toContain("hostfwd");
    expect(user[0]).toContain("guestfwd=tcp:10.0.2.100:3128-cmd:/usr/bin/perl /vm/relay.pl /vm/egress.sock");
    // The helper has no machine: no CPU and no device model for a guest to reach.
    expect(args[args.indexOf("-M") + 1]).toBe("none");
    expect(() => netHelperArgs({ ...relay, script: "/w/a,b.pl" }, "/w/vm-1")).toThrow(/space or comma/);
    // The VM's own QEMU has no user-mode network at all (only the link to its helper) and may not spawn.
    const vm = qemuArgs({
      accel: "tcg",
      vmlinuz: "/vm/vmlinuz",
      initramfs: "/vm/initramfs",
      rootfs: "/vm/rootfs",
      runDir: "/w/vm-1",
      tscKhz: null,
      resources: { vcpus: 1, memoryMiB: 256 },
      workDisk: "/vm/disk.img",
    });
    expect(vm.filter((_, i) => vm[i - 1] === "-netdev")).toEqual(["socket,id=n0,fd=3"]);
    expect(vm[vm.indexOf("-sandbox") + 1]).toContain("spawn=deny");
    expect(vm.join(" ")).not.toMatch(/exec:|cmd:/);
  });

  it("a warm VM reaches the allowed host through its attempt's proxy, is denied the other, and has no other route out", {
    timeout: TIMEOUT_MS,
  }, async () => {
    await poolReady();
    const attemptId = randomUUID();
    const decisions: EgressDecisionEvent[] = [];
    const denials: string[] = [];
    const listener = await proxy.open({
      attemptId,
      trustClass: "trusted",
      listen: "unix",
      policy: { trustClass: "trusted", allowList: [`localhost:${allowed}`] },
      onDecision: (e) => decisions.push(e),
      onDenied: (line) => denials.push(line),
    });
    const hitsBefore = driver.stats.poolHits;
    const sandbox = await driver.create({ attemptId, image: null });
    expect(driver.stats.poolHits).toBe(hitsBefore + 1);
    expect(sandbox.isolation.detail).toContain("restrict=on");
    let out = "";
    let r;
    try {
      r = await runCaptured(sandbox, PROBES(allowed, other));
      out = r.stdout.toString();
    } finally {
      await sandbox.destroy();
      await listener.close();
    }
    expect(r.exitCode, r.stderr.toString()).toBe(0);
    const section = (name: string) => out.split(`--- ${name}\n`)[1]?.split("\n--- ")[0] ?? "";
    expect(out).toContain("proxy=http://10.0.2.100:3128");
    expect(section("allowed")).toMatch(/^HTTP\/1\.1 200/);
    expect(section("allowed")).toContain("hello / from the allowed server");
    expect(section("tunnel")).toMatch(/^HTTP\/1\.1 200/);
    expect(section("tunnel")).toContain("hello /tunnel from the allowed server");
    const line = `kiln egress denied: localhost:${other} is not allowed for trusted runs`;
    expect(section("other")).toMatch(/^HTTP\/1\.1 403/);
    expect(section("other")).toContain(`X-Kiln-Egress: ${line}`);
    expect(section("other")).not.toContain("the other server");
    // The probe itself can tell: the proxy address answers.
    expect(out).toContain("direct 10.0.2.100:3128 reached");
    for (const target of [`10.0.2.2:${allowed}`, "10.0.2.2:22", "10.0.2.3:53", "10.0.2.100:80", "1.1.1.1:80"]) {
      expect(out).toContain(`direct ${target} blocked`);
    }
    expect(denials).toEqual([line]);
    expect(decisions).toEqual([
      { host: "localhost", port: allowed, decision: "allowed", reason: "allow_list" },
      { host: "localhost", port: allowed, decision: "allowed", reason: "allow_list" },
      { host: "localhost", port: other, decision: "denied", reason: "not_on_allow_list" },
    ]);
    // Relays die with their connections and QEMU; nothing of the VM survives destroy().
    expect(await waitForNoProcesses(path.dirname(sandbox.hostWorkspaceDir))).toEqual([]);
  });

  it("an untrusted attempt reaches nothing, whatever the allow-list says", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const attemptId = randomUUID();
    const decisions: EgressDecisionEvent[] = [];
    const listener = await proxy.open({
      attemptId,
      trustClass: "untrusted",
      listen: "unix",
      // The control plane sends untrusted attempts an empty list; a stale one must not matter either.
      policy: { trustClass: "untrusted", allowList: [`localhost:${allowed}`] },
      onDecision: (e) => decisions.push(e),
      onDenied: () => undefined,
    });
    const sandbox = await driver.create({ attemptId, image: null });
    let out: string;
    try {
      out = (
        await runCaptured(
          sandbox,
          `${CLIENT}\necho "--- allowed"; req localhost:${allowed}; echo\necho "--- other"; req localhost:${other}; echo\necho "--- end"`,
        )
      ).stdout.toString();
    } finally {
      await sandbox.destroy();
      await listener.close();
    }
    expect(out).toContain(`X-Kiln-Egress: kiln egress denied: localhost:${allowed} is not allowed for untrusted runs`);
    expect(out).toContain(`X-Kiln-Egress: kiln egress denied: localhost:${other} is not allowed for untrusted runs`);
    expect(out).not.toContain("the other server");
    expect(decisions).toEqual([
      { host: "localhost", port: allowed, decision: "denied", reason: "untrusted_run" },
      { host: "localhost", port: other, decision: "denied", reason: "untrusted_run" },
    ]);
  });

  it("an attempt without an egress listener gets a network that leads nowhere", { timeout: TIMEOUT_MS }, async () => {
    const sandbox = await driver.create({ attemptId: randomUUID(), image: null });
    try {
      const r = await runCaptured(
        sandbox,
        String.raw`echo "proxy=[$HTTP_PROXY]"; printf '%s\n' 'printf "GET http://localhost:${allowed}/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"; cat >&2' > /tmp/client.sh; timeout 20 nc 10.0.2.100 3128 -e sh /tmp/client.sh 2>&1; echo "rc=$?"`,
      );
      const out = r.stdout.toString();
      expect(out).toContain("proxy=[]");
      expect(out).not.toContain("allowed server");
      expect(out).toMatch(/rc=\d+/);
    } finally {
      await sandbox.destroy();
    }
  });
});
