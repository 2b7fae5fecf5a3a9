// The host side of a microVM, attacked from QEMU's seat (issue 28): a device-emulation or slirp bug
// gives the guest QEMU's identity, so that identity must not be host root and must see nothing of
// the agent. The test takes over a running VM's QEMU and network helper as far as the host allows
// anyone to: their credentials and seccomp state from /proc, their namespaces, and their view of the
// filesystem by entering their mount namespace under their uid (nsenter), where it tries to read a
// secret planted in the agent's work dir, the asset cache, /tmp and the host's root. A root agent
// jails QEMU; an unprivileged one still has -sandbox on.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, readdir, readlink, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@kiln/logger";
import type { Sandbox } from "../sandbox-driver.ts";
import { runCaptured, waitForNoProcesses } from "../sandbox-contract-support.ts";
import { createMicrovmDriver, type MicrovmDriver } from "./microvm-driver.ts";
import { QEMU_HOST_ID_BASE } from "./qemu-jail.ts";
import { MICROVM_TEST_SIZES } from "./microvm-test-sizes.ts";

const TIMEOUT_MS = 180_000;
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
const isRoot = process.getuid?.() === 0;
const secretText = `agent-secret-${randomUUID()}`;
let workDir = "";
let secretFile = "";
let driver: MicrovmDriver;
let sandbox: Sandbox;
let runDir = "";

function sh(file: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(file, args, { env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" } }, (err, stdout, stderr) =>
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

async function status(pid: number): Promise<Record<string, string>> {
  const text = await readFile(`/proc/${pid}/status`, "utf8");
  return Object.fromEntries(text.split("\n").map((l) => [l.split(":")[0] ?? "", l.split(":\t")[1]?.trim() ?? ""]));
}

async function pidOf(file: string): Promise<number> {
  return Number((await readFile(path.join(runDir, file), "utf8")).trim());
}

beforeAll(async () => {
  workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-jail-"));
  secretFile = path.join(workDir, "agent-secret.txt");
  await writeFile(secretFile, secretText, { mode: 0o644 });
  driver = await createMicrovmDriver({
    workDir,
    assetsDir: ASSETS_DIR,
    warmPoolSize: 0,
    sizes: MICROVM_TEST_SIZES,
    accel: "auto",
    logger: createLogger({}, () => undefined),
  });
  sandbox = await driver.create({ attemptId: randomUUID(), image: null });
  runDir = path.dirname(sandbox.hostWorkspaceDir);
}, TIMEOUT_MS);

afterAll(async () => {
  await sandbox?.destroy();
  await driver?.close();
  await rm(workDir, { recursive: true, force: true });
}, TIMEOUT_MS);

describe("a running VM's QEMU, seen from its own seat", () => {
  it("runs under QEMU's seccomp filter, the VM's without spawn, both without privileges", async () => {
    for (const file of ["qemu.pid", "net.pid"]) {
      const pid = await pidOf(file);
      const cmdline = (await readFile(`/proc/${pid}/cmdline`, "utf8")).split("\0");
      expect(cmdline[0]).toContain("qemu-system");
      const s = await status(pid);
      expect(s.Seccomp, file).toBe("2");
      if (!isRoot) continue;
      const uids = (s.Uid ?? "").split(/\s+/).map(Number);
      const gids = (s.Gid ?? "").split(/\s+/).map(Number);
      expect(uids, file).toHaveLength(4);
      for (const id of [...uids, ...gids]) {
        expect(id, file).not.toBe(0);
        expect(id, file).toBeGreaterThanOrEqual(QEMU_HOST_ID_BASE);
      }
      expect(s.Groups, file).toBe("");
      expect(s.NoNewPrivs, file).toBe("1");
      for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"])
        expect(s[set], `${file} ${set}`).toMatch(/^0+$/);
    }
    const vmArgs = (await readFile(`/proc/${await pidOf("qemu.pid")}/cmdline`, "utf8")).split("\0");
    expect(vmArgs[vmArgs.indexOf("-sandbox") + 1]).toContain("spawn=deny");
    // No way out through a process QEMU starts: the VM's QEMU has no exec: or cmd: anywhere.
    expect(vmArgs.join(" ")).not.toMatch(/exec:|cmd:/);
    // The steps still run: the jail did not cost the guest anything.
    expect((await runCaptured(sandbox, "echo alive")).out).toBe("alive\n");
  });

  it.runIf(isRoot)("is a different uid from its helper, in mount and network namespaces of its own", async () => {
    const vm = await pidOf("qemu.pid");
    const net = await pidOf("net.pid");
    expect((await status(vm)).Uid).not.toBe((await status(net)).Uid);
    for (const ns of ["mnt", "net"]) {
      const mine = await readlink(`/proc/self/ns/${ns}`);
      for (const pid of [vm, net]) expect(await readlink(`/proc/${pid}/ns/${ns}`), `${pid} ${ns}`).not.toBe(mine);
      expect(await readlink(`/proc/${vm}/ns/${ns}`)).not.toBe(await readlink(`/proc/${net}/ns/${ns}`));
    }
  });

  it.runIf(isRoot)(
    "cannot read the agent's work dir, the asset cache or the host's files",
    {
      timeout: TIMEOUT_MS,
    },
    async () => {
      for (const file of ["qemu.pid", "net.pid"]) {
        const pid = await pidOf(file);
        const uid = (await status(pid)).Uid?.split(/\s+/)[0] ?? "0";
        // QEMU's root is a view: only what it was given, and no host tree beside it.
        const root = (await readdir(`/proc/${pid}/root`)).sort();
        expect(root, file).toEqual(
          ["bin", "dev", "etc", "lib", "lib64", "sbin", "usr", "vm"].filter((d) => root.includes(d)),
        );
        for (const absent of ["tmp", "root", "home", "var", "proc", "sys", "run", "boot"])
          expect(root, file).not.toContain(absent);
        // Enter its mount namespace and root as its uid, and try what a compromised QEMU would.
        const as = ["-t", String(pid), "-m", "-r", "-w", "-S", uid, "-G", uid, "--"];
        // Control: the same entry reads what QEMU was given, so the refusals below are the jail's.
        const given = file === "qemu.pid" ? "/vm/initramfs" : "/vm/relay.pl";
        const control = await sh("nsenter", [...as, "/bin/sh", "-c", `test -r ${given} && id -u`]);
        expect(control, file).toEqual({ code: 0, out: `${uid}\n` });
        const tries = [
          secretFile,
          path.join(workDir, "egress-relay.pl"),
          path.join(runDir, "console.log"),
          ASSETS_DIR,
          os.tmpdir(),
          "/etc/shadow",
          "/root",
        ];
        for (const target of tries) {
          const r = await sh("nsenter", [...as, "/bin/cat", target]);
          expect(r.code, `${file} reading ${target}: ${r.out}`).not.toBe(0);
          expect(r.out).not.toContain(secretText);
        }
        // The view itself is read-only: nothing to plant for later.
        expect(
          (await sh("nsenter", [...as, "/bin/sh", "-c", "echo x > /vm/planted || echo x > /planted"])).code,
        ).not.toBe(0);
        // And outside its namespace, its uid opens nothing of the agent's either (the work dir is 0700).
        const outside = await sh("setpriv", [
          "--reuid",
          uid,
          "--regid",
          uid,
          "--clear-groups",
          "--",
          "/bin/cat",
          secretFile,
        ]);
        expect(outside.code).not.toBe(0);
        expect(outside.out).not.toContain(secretText);
      }
      // The agent can, by the same path: the attempts above failed for QEMU's identity, not the path.
      expect(await readFile(secretFile, "utf8")).toBe(secretText);
    },
  );

  it("leaves no QEMU behind once the sandbox is destroyed", { timeout: TIMEOUT_MS }, async () => {
    const sb = await driver.create({ attemptId: randomUUID(), image: null });
    const dir = path.dirname(sb.hostWorkspaceDir);
    const pids = [
      Number((await readFile(path.join(dir, "qemu.pid"), "utf8")).trim()),
      Number((await readFile(path.join(dir, "net.pid"), "utf8")).trim()),
    ];
    expect(await waitForNoProcesses(dir, 1)).not.toEqual([]);
    await sb.destroy();
    expect(await waitForNoProcesses(dir)).toEqual([]);
    for (const pid of pids) expect(await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "")).toBe("");
  });
});
