// The process driver runs steps inside the job image's unpacked rootfs (issue 30), with every layer
// of the hardened view kept (docs/adr/0019): the step sees the image's files and none of the host's,
// runs as the unprivileged step user holding nothing, and the shared rootfs is never written.
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { mkdir, mkdtemp, readdir, rm, stat, symlink } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { gunzipSync } from "node:zlib";
import { writeTar, type TarEntry } from "@kiln/oci";
import { buildBaseImage } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { imageHasShell, LayerApplier, noShellVerdict } from "../../images/index.ts";
import { readTar } from "../../shared/tar-reader.ts";
import type { Sandbox } from "../sandbox-driver.ts";
import { SANDBOX_STEP_ID } from "./private-view.ts";
import { createLogger } from "@kiln/logger";
import { EgressProxy } from "../../egress/index.ts";
import { findForwarderTools } from "./egress-forwarder.ts";
import { probeNamespaces } from "./namespace-probe.ts";
import { createProcessDriver, ProcessDriver } from "./process-driver.ts";

const quiet = createLogger({}, () => undefined);
const OS_RELEASE = `ID=kiln-image-root-test\nVERSION_ID=${randomUUID()}\n`;

/** Unpacks the busybox base image plus `extra` the way the agent does (safe-unpack.ts). */
async function unpackImage(dir: string, extra: TarEntry[]): Promise<string> {
  const base = await buildBaseImage();
  const layers: Buffer[] = base.layerDigests.map((d) => gunzipSync(base.blobs.get(d)!));
  layers.push(writeTar(extra));
  await mkdir(dir, { mode: 0o755 });
  const applier = new LayerApplier(dir, { maxBytes: 1 << 30, maxEntries: 100_000 });
  for (const layer of layers) await applier.apply(readTar(Readable.from([layer])));
  await applier.finish();
  return dir;
}

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

/** Every path under `dir` with its mtime: what a view that wrote into the shared rootfs would change. */
async function snapshot(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const p = path.join(e.parentPath, e.name);
    out.push(`${path.relative(dir, p)} ${(await stat(p).catch(() => null))?.mtimeMs ?? "link"}`);
  }
  return out.sort();
}

describe.runIf(process.getuid?.() === 0)("process driver: the step's root is the job image", () => {
  let base: string;
  let rootfs: string;
  let before: string[];
  const drivers: { driver: ProcessDriver; workDir: string }[] = [];

  beforeAll(async () => {
    base = await mkdtemp(path.join(os.tmpdir(), "kiln-image-root-"));
    rootfs = await unpackImage(path.join(base, "rootfs"), [
      { path: "etc/os-release", type: "file", mode: 0o644, data: OS_RELEASE },
      { path: "opt/marker", type: "file", mode: 0o644, data: "from the image\n" },
    ]);
    before = await snapshot(rootfs);
    // One work dir under /tmp (the view mounts a private /tmp around it) and one elsewhere (the
    // directories leading to it are the view's own, filled from the image around them).
    const repoData = path.resolve(import.meta.dirname, "../../../../../.kiln-data");
    await mkdir(repoData, { recursive: true });
    for (const parent of [base, repoData]) {
      const workDir = await mkdtemp(path.join(parent, "work-"));
      drivers.push({ driver: await createProcessDriver({ workDir }), workDir });
    }
  }, 60_000);
  afterAll(async () => {
    for (const d of drivers) await rm(d.workDir, { recursive: true, force: true });
    await rm(base, { recursive: true, force: true });
  });

  const cases = [0, 1] as const;
  it.each(cases)("sees the image's files, not the host's (work dir %i)", { timeout: 30_000 }, async (i) => {
    const { driver } = drivers[i]!;
    const sb = await driver.create({
      attemptId: `att-${randomUUID()}`,
      image: "t",
      rootfs: { dir: rootfs, digest: "sha256:0" },
    });
    try {
      // The host has perl (the view itself is Perl); the busybox image does not.
      expect(existsSync("/usr/bin/perl")).toBe(true);
      const r = await run(
        sb,
        "cat /etc/os-release /opt/marker; readlink /bin/sh; [ -e /usr/bin/perl ] || echo no-perl; [ -e /usr/lib/x86_64-linux-gnu ] || [ -e /usr/lib/aarch64-linux-gnu ] || echo no-host-libs; " +
          "id -u; id -un; grep -E '^(CapEff|CapBnd|NoNewPrivs):' /proc/self/status; cut -d: -f1 /etc/passwd | tr '\\n' ' '; echo; " +
          "for p in / /etc /bin /opt /usr/bin; do (touch $p/kiln-w) 2>/dev/null && echo wrote $p; done; " +
          "echo w > mine && touch $HOME/h $TMPDIR/t /tmp/t /var/tmp/t /dev/shm/t && echo writable",
      );
      expect(r.out).toBe(
        [
          ...OS_RELEASE.trim().split("\n"),
          "from the image",
          "busybox",
          "no-perl",
          "no-host-libs",
          String(SANDBOX_STEP_ID),
          "kiln",
          "CapEff:\t0000000000000000",
          "CapBnd:\t0000000000000000",
          "NoNewPrivs:\t1",
          "root nobody kiln ",
          "writable",
          "",
        ].join("\n"),
      );
      expect(r.code).toBe(0);
    } finally {
      await sb.destroy();
    }
  });

  it("shows the image's top level plus the view's own mount points, and no host path", {
    timeout: 30_000,
  }, async () => {
    const { driver, workDir } = drivers[1]!;
    const sb = await driver.create({
      attemptId: `att-${randomUUID()}`,
      image: "t",
      rootfs: { dir: rootfs, digest: "sha256:0" },
    });
    try {
      const top = workDir.split("/")[1]!;
      const r = await run(
        sb,
        `ls -A /; echo --; ls -A ${workDir}; [ -e ${process.cwd()}/package.json ] && echo host-visible; true`,
      );
      const [list, work] = r.out.split("--\n");
      const image = (await readdir(rootfs)).filter((e) => e !== "sys");
      expect(list!.trim().split("\n").sort()).toEqual([...new Set([...image, "dev", "proc", "tmp", top])].sort());
      expect(work).toBe(`${path.basename(path.dirname(sb.hostWorkspaceDir))}\n`);
    } finally {
      await sb.destroy();
    }
  });

  // The per-step forwarder used to be a host perl exec'd after pivot_root, which no image has: it is
  // now forked by the view itself. Both egress modes, with the image's busybox wget as the client.
  it.each(["held namespace", "per-step forwarder"] as const)(
    "%s: the step reaches the allowed server through the proxy, from inside the image",
    { timeout: 60_000 },
    async (mode) => {
      const server = http.createServer((_req, res) => res.end("through-the-proxy"));
      await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
      const port = (server.address() as AddressInfo).port;
      const namespaces = await probeNamespaces();
      const tools = await findForwarderTools();
      if ("missing" in tools) throw new Error(`missing ${tools.missing.join(", ")}`);
      const workDir = path.join(base, `egress-${mode.replace(/ /g, "-")}`);
      await mkdir(workDir);
      const driver = new ProcessDriver(
        workDir,
        namespaces,
        mode === "held namespace" ? tools : { ...tools, nsenter: null },
      );
      const proxy = new EgressProxy({
        socketDir: path.join(base, "sock"),
        allowInternalAddresses: true,
        logger: quiet,
      });
      const attemptId = randomUUID();
      const listener = await proxy.open({
        attemptId,
        trustClass: "trusted",
        listen: "unix",
        policy: { trustClass: "trusted", allowList: [`localhost:${port}`] },
        onDecision: () => undefined,
        onDenied: () => undefined,
      });
      const sb = await driver.create({ attemptId, image: "t", rootfs: { dir: rootfs, digest: "sha256:0" } });
      try {
        const r = await run(
          sb,
          `[ -e /usr/bin/perl ] || echo no-perl; unset NO_PROXY no_proxy; wget -q -O - http://localhost:${port}/ && echo; ` +
            `wget -q -T 5 -O - -Y off http://127.0.0.1:${port}/ 2>/dev/null || echo direct-refused`,
        );
        expect(r.out).toBe("no-perl\nthrough-the-proxy\ndirect-refused\n");
      } finally {
        await sb.destroy();
        await listener.close();
        await proxy.close();
        server.close();
      }
    },
  );

  it("never writes into the shared rootfs", async () => {
    expect(await snapshot(rootfs)).toEqual(before);
  });

  it("finds the image's shell through its links, and says when there is none", { timeout: 60_000 }, async () => {
    expect(await imageHasShell(rootfs)).toBe(true);
    const noShell = await unpackImage(path.join(base, "no-shell"), []);
    await rm(path.join(noShell, "bin/sh"));
    expect(await imageHasShell(noShell)).toBe(false);
    expect(await noShellVerdict("registry.test/no-shell:1", noShell)).toMatchObject({
      outcome: "user_failure",
      cause: "image.no_shell",
    });
    const escaping = path.join(base, "escaping");
    await mkdir(path.join(escaping, "bin"), { recursive: true });
    // An absolute link resolves from the image's top, never the host's /bin/sh.
    await symlink("/nowhere/sh", path.join(escaping, "bin/sh"));
    expect(await imageHasShell(escaping)).toBe(false);
  });
});
