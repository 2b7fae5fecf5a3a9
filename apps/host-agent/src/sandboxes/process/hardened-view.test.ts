// The process driver's hardened view layer by layer (private-view.ts, docs/adr/0019): who a step
// is, what it holds, what of the host it sees, and its limits. Runs where the agent is root (the
// case the id mapping exists for); an unprivileged agent's view is covered by the contract suite.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { chown, lstat, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../sandbox-driver.ts";
import { DEFAULT_SANDBOX_LIMITS, SANDBOX_HOST_STEP_ID, SANDBOX_STEP_ID } from "./private-view.ts";
import { createProcessDriver, type ProcessDriver } from "./process-driver.ts";

async function run(sb: Sandbox, command: string): Promise<{ code: number | null; out: string }> {
  let out = "";
  const r = await sb.runStep(
    command,
    { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: sb.paths.home, TMPDIR: sb.paths.tmp },
    {},
    (c) => (out += c.toString()),
    (c) => (out += c.toString()),
  );
  return { code: r.exitCode, out };
}

describe.runIf(process.getuid?.() === 0)("process driver: hardened view (root agent)", () => {
  let workDir: string;
  let driver: ProcessDriver;
  let sb: Sandbox;
  let other: Sandbox;

  beforeAll(async () => {
    workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-hardened-"));
    driver = await createProcessDriver({ workDir });
    expect(driver.isolation.level).toBe("namespaces");
    sb = await driver.create({ attemptId: `att-${randomUUID()}`, image: null });
    other = await driver.create({ attemptId: `att-${randomUUID()}`, image: null });
    await writeFile(path.join(other.hostWorkspaceDir, "other-secret.txt"), "s3cr3t\n");
  });
  afterAll(async () => {
    await sb?.destroy();
    await other?.destroy();
    await rm(workDir, { recursive: true, force: true });
  });

  it("runs the step as an unprivileged uid with no capabilities and no_new_privs", async () => {
    const r = await run(sb, "id -u; id -g; id -G; grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status");
    expect(r.out).toBe(
      [
        SANDBOX_STEP_ID,
        SANDBOX_STEP_ID,
        SANDBOX_STEP_ID,
        ...["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"].map((c) => `${c}:\t0000000000000000`),
        "NoNewPrivs:\t1",
        "",
      ].join("\n"),
    );
    expect(driver.isolation.detail).toContain(`host uid ${SANDBOX_HOST_STEP_ID}`);
  });

  it("gives what the step writes (and its processes) the step's uid, which is no host user", async () => {
    // pid 1 is the view's init, host root: outside the step's id map, so it shows as nobody.
    const r = await run(sb, "echo from-step > mine.txt; stat -c %u /proc/$$ /proc/1");
    expect(r.out).toBe(`${SANDBOX_STEP_ID}\n65534\n`);
    expect((await stat(path.join(sb.hostWorkspaceDir, "mine.txt"))).uid).toBe(SANDBOX_HOST_STEP_ID);
  });

  it("hands the agent's checkout to the step, without following a step's symlinks", async () => {
    await writeFile(path.join(sb.hostWorkspaceDir, "checked-out.txt"), "x\n");
    const target = path.join(workDir, `host-owned-${randomUUID()}`);
    await writeFile(target, "host\n");
    const r = await run(sb, `echo more >> checked-out.txt && ln -s ${target} link && echo ok`);
    expect(r.out).toBe("ok\n");
    await run(sb, "true"); // the next step's hand-over walks the tree with the link in it
    expect((await lstat(path.join(sb.hostWorkspaceDir, "link"))).uid).toBe(SANDBOX_HOST_STEP_ID);
    expect((await stat(target)).uid).toBe(0);
    expect(await readFile(path.join(sb.hostWorkspaceDir, "checked-out.txt"), "utf8")).toBe("x\nmore\n");
  });

  it("builds a root of system directories only, read-only, with a minimal /dev", async () => {
    const r = await run(
      sb,
      "ls -A /; echo --; ls -A /dev; echo --; for p in / /usr /etc /dev /proc/1; do (touch $p/kiln-w) 2>/dev/null && echo wrote $p; done; echo --; touch $HOME/h $TMPDIR/t /tmp/t /var/tmp/t /dev/shm/t && echo writable",
    );
    const [top, dev, wrote, writable] = r.out.split("--\n");
    const system = ["bin", "sbin", "lib", "lib32", "lib64", "libx32", "opt"].filter((d) => existsSync(`/${d}`));
    expect(top!.trim().split("\n").sort()).toEqual(
      [...system, "dev", "etc", "home", "proc", "run", "tmp", "usr", "var"].sort(),
    );
    expect(dev!.trim().split("\n").sort()).toEqual(
      [
        "fd",
        "full",
        "null",
        "ptmx",
        "pts",
        "random",
        "shm",
        "stderr",
        "stdin",
        "stdout",
        "tty",
        "urandom",
        "zero",
      ].sort(),
    );
    expect(wrote).toBe("");
    expect(writable).toBe("writable\n");
  });

  it("hides every other sandbox, the work dir, the checkout, root-only files and devices", async () => {
    const hidden = [
      path.dirname(other.hostWorkspaceDir),
      path.join(other.hostWorkspaceDir, "other-secret.txt"),
      path.join(workDir, "probe-anything"),
      process.cwd(),
      "/etc/shadow",
      "/etc/gshadow",
      "/root",
      "/sys/kernel",
      "/var/lib",
      "/dev/vda",
      "/dev/mem",
      "/dev/kmsg",
    ];
    const r = await run(
      sb,
      hidden.map((p) => `[ -e '${p}' ] && echo "visible ${p}"`).join("; ") + "; ls -A " + workDir,
    );
    expect(r.out).toBe(`${path.basename(path.dirname(sb.hostWorkspaceDir))}\n`);
    const passwd = await run(sb, "cut -d: -f1 /etc/passwd");
    expect(passwd.out).toBe("root\nkiln\nnobody\n");
  });

  it("applies the process, file size, memory and core dump limits", async () => {
    const r = await run(
      sb,
      "grep -E '^Max (processes|file size|data size|core file size) ' /proc/self/limits | tr -s ' '",
    );
    const { processes, fileSizeBytes, dataBytes } = DEFAULT_SANDBOX_LIMITS;
    expect(r.out).toBe(
      `Max file size ${fileSizeBytes} ${fileSizeBytes} bytes \nMax data size ${dataBytes} ${dataBytes} bytes \n` +
        `Max core file size 0 0 bytes \nMax processes ${processes} ${processes} processes \n`,
    );
  });
});

// What an unprivileged agent's step checks about itself (an unprivileged agent can map only its own uid).
const STEP =
  "id -u; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status; [ -e /etc/shadow ] || echo no-shadow; [ -e /root ] || echo no-root; echo mine > mine && cat mine";

describe.runIf(process.getuid?.() === 0)("process driver: hardened view (unprivileged agent)", () => {
  it("runs its steps as root of a user namespace holding nothing: no capabilities, no_new_privs, the same root", {
    timeout: 60_000,
  }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-unprivileged-"));
    try {
      await chown(dir, 65534, 65534);
      const child = fileURLToPath(new URL("./unprivileged-agent-child.ts", import.meta.url));
      const { stdout } = await promisify(execFile)(
        "/usr/bin/setpriv",
        [
          ...["--reuid", "65534", "--regid", "65534", "--clear-groups", "--", process.execPath, "--import", "tsx"],
          ...[child, path.join(dir, "work"), STEP],
        ],
        // From the repository, where `--import tsx` resolves; the agent only writes its work dir.
        { cwd: process.cwd(), env: { PATH: "/usr/bin:/bin", HOME: dir }, timeout: 50_000 },
      ).catch((e: { stdout?: string; stderr?: string }) => {
        throw new Error(`unprivileged agent failed: ${e.stdout ?? ""}${e.stderr ?? ""}`);
      });
      expect(stdout).toBe(
        "0\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nno-shadow\nno-root\nmine\nexit=0\n",
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
