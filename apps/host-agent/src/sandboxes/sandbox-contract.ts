// The SandboxDriver contract, shared by every driver (process and microvm call it from their own
// thin test files). A driver that fails a case is listed in `knownFailures` with the reason: the
// case then runs as `it.fails`, so the gap stays visible and the day it is fixed the suite says so.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { access, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os, { constants } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ALL_BYTES,
  ALL_BYTES_PRINTF,
  processesReferencing,
  runCaptured,
  waitForNoProcesses,
} from "./sandbox-contract-support.ts";
import { plantAgentEnvVar } from "../env.ts";
import type { Sandbox, SandboxDriver, StepResult } from "./sandbox-driver.ts";

type ContractCase =
  | "steps"
  | "streams"
  | "chatty"
  | "processes-network"
  | "kill"
  | "isolation"
  | "destroy"
  | "leftovers"
  | "agent-sigkill";

interface ContractTarget {
  driver: SandboxDriver;
  workDir: string;
  /** A second driver on the same work dir: the agent restarted after a crash. */
  restart(): Promise<SandboxDriver>;
  /** argv of a child agent that creates a sandbox, starts a long step and prints READY. */
  childAgentArgv(): string[];
  close(): Promise<void>;
}

export interface ContractOptions {
  name: string;
  setup(): Promise<ContractTarget>;
  /** Per-case budget; a VM boot on a loaded 2-core machine can take tens of seconds. */
  timeoutMs: number;
  knownFailures?: Partial<Record<ContractCase, string>>;
  /**
   * Network interfaces a step sees when its attempt has no egress listener (default: only `lo`).
   * A driver listing more must say why; the case still proves none of them leads anywhere.
   */
  interfaces?: { names: string[]; reason: string };
}

/** A shell in a pid namespace (unshare) reports its child's signal n as exit 128+n: same fact. */
function killedBy(r: StepResult): string | null {
  if (r.signal) return r.signal;
  if (r.exitCode === 128 + constants.signals.SIGTERM) return "SIGTERM";
  if (r.exitCode === 128 + constants.signals.SIGKILL) return "SIGKILL";
  return null;
}

// Quotes, expansions and a newline: none of it may be interpreted on the way into the step.
const TRICKY_VALUE = "hi 'there' $x `id` $(id) \"q\"\nsecond line \\n";

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

export function describeSandboxContract(opts: ContractOptions): void {
  describe(`SandboxDriver contract: ${opts.name}`, () => {
    let t: ContractTarget;
    const newSandbox = () => t.driver.create({ attemptId: `att-${randomUUID()}`, image: null });
    const test = (name: ContractCase, title: string, fn: () => Promise<void>) => {
      const known = opts.knownFailures?.[name];
      if (known) it.fails(`${title} [known failure: ${known}]`, { timeout: opts.timeoutMs }, fn);
      else it(title, { timeout: opts.timeoutMs }, fn);
    };

    beforeAll(async () => {
      t = await opts.setup();
    }, opts.timeoutMs * 2);
    afterAll(async () => {
      await t?.close();
    }, opts.timeoutMs);

    describe("one job, several steps", () => {
      let sb: Sandbox;
      beforeAll(async () => {
        sb = await newSandbox();
        // The agent checks the source out into hostWorkspaceDir before any step runs.
        await writeFile(path.join(sb.hostWorkspaceDir, "checked-out.txt"), "from the checkout\n");
        await mkdir(path.join(sb.hostWorkspaceDir, "sub/dir"), { recursive: true });
      }, opts.timeoutMs);
      afterAll(async () => {
        await sb?.destroy();
      }, opts.timeoutMs);

      test("steps", "runs steps in order, in the workspace, with exactly the given env", async () => {
        const unplant = plantAgentEnvVar("KILN_CONTRACT_AGENT_SECRET", "agent-only-7d1e");
        const first = await runCaptured(
          sb,
          'cat checked-out.txt; echo one > order.txt; pwd; printf "%s\\n" "$GREETING"; echo "$HOME|$TMPDIR"; env',
          { GREETING: TRICKY_VALUE },
        ).finally(unplant);
        expect(first.exitCode).toBe(0);
        expect(
          first.out.startsWith(
            `from the checkout\n${sb.paths.workspace}\n${TRICKY_VALUE}\n${sb.paths.home}|${sb.paths.tmp}\n`,
          ),
        ).toBe(true);
        expect(first.out).not.toContain("KILN_CONTRACT_AGENT_SECRET");
        const second = await runCaptured(sb, "cat order.txt; echo two >> order.txt; export LEAKED=1");
        expect(second.out).toBe("one\n");
        const third = await runCaptured(sb, 'cat ../../order.txt; pwd; echo "leaked=${LEAKED:-no}"', {}, "sub/dir");
        expect(third.out).toBe(`one\ntwo\n${path.posix.join(sb.paths.workspace, "sub/dir")}\nleaked=no\n`);
        await expect(runCaptured(sb, "true", {}, "../..")).rejects.toThrow(/outside the workspace/);
        if (sb.collectWorkspace) await sb.collectWorkspace();
        expect(await readFile(path.join(sb.hostWorkspaceDir, "order.txt"), "utf8")).toBe("one\ntwo\n");
      });

      test("streams", "reports exit codes and keeps stdout and stderr apart, byte for byte", async () => {
        const r = await runCaptured(sb, "echo out; echo err >&2; printf 'no newline'; exit 3");
        expect(r).toMatchObject({ exitCode: 3, signal: null, out: "out\nno newline", err: "err\n" });
        const bin = await runCaptured(sb, `printf '${ALL_BYTES_PRINTF}'; printf '${ALL_BYTES_PRINTF}' >&2`);
        expect(bin.exitCode).toBe(0);
        expect(bin.stdout.equals(ALL_BYTES)).toBe(true);
        expect(bin.stderr.equals(ALL_BYTES)).toBe(true);
        expect((await runCaptured(sb, "true")).exitCode).toBe(0);
      });

      test("chatty", "drains 4 MB of stdout and 1 MB of stderr written at the same time", async () => {
        const r = await runCaptured(
          sb,
          "head -c 1048576 /dev/zero | tr '\\0' e >&2 & head -c 4194304 /dev/zero | tr '\\0' x; wait",
        );
        expect(r.exitCode).toBe(0);
        expect(r.stdout.length).toBe(4 * 1024 * 1024);
        expect(r.stdout.every((b) => b === 0x78)).toBe(true);
        expect(r.stderr.length).toBe(1024 * 1024);
      });

      test(
        "processes-network",
        "a job cannot see another job's processes, and without an egress listener reaches no network",
        async () => {
          const chunks: string[] = [];
          const running = sb.runStep(
            "sleep 987654 & echo started; wait",
            { PATH: "/usr/local/bin:/usr/bin:/bin" },
            {},
            (c) => chunks.push(c.toString()),
            () => undefined,
          );
          while (!chunks.join("").includes("started")) await new Promise((r) => setTimeout(r, 20));
          const other = await newSandbox();
          // A host service on every host address, and the user-net gateway's view of the host.
          let reached = 0;
          const server = net.createServer((c) => ((reached += 1), c.destroy()));
          await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", () => resolve()));
          const port = (server.address() as net.AddressInfo).port;
          const hostAddresses = Object.values(os.networkInterfaces())
            .flat()
            .filter((a) => a?.family === "IPv4")
            .map((a) => a!.address);
          try {
            // Its own background sleep must show up (the census works), the other job's must not.
            const census =
              "sleep 55555 & for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < $f; echo; done 2>/dev/null | grep -o 'sleep [0-9][0-9]*' | sort -u; kill $!";
            const r = await runCaptured(other, `${census}; cat /proc/net/dev`);
            const [seen, ...netDev] = r.out.split("\n");
            expect(seen).toBe("sleep 55555");
            const interfaces = netDev
              .slice(2)
              .filter((l) => l.includes(":"))
              .map((l) => l.split(":")[0]!.trim());
            expect(interfaces.sort(), opts.interfaces?.reason).toEqual(
              (opts.interfaces?.names ?? ["lo"]).slice().sort(),
            );
            // busybox (busybox-static on the host, the base image's in a VM): the same client for both.
            const probes = [...hostAddresses, "10.0.2.2"].map(
              (a) =>
                `if busybox nc -w 3 ${a} ${port} </dev/null >/dev/null 2>&1; then echo "reached ${a}"; else echo "blocked ${a}"; fi`,
            );
            const reach = await runCaptured(
              other,
              ["busybox nc --help >/dev/null 2>&1 && echo 'client ok'", ...probes].join("\n"),
            );
            // A missing client would read as "blocked": prove it is there first.
            expect(reach.out).toContain("client ok");
            expect(reach.out).not.toContain("reached");
            expect(reach.out.split("\n").filter((l) => l.startsWith("blocked "))).toHaveLength(
              hostAddresses.length + 1,
            );
            expect(reached).toBe(0);
          } finally {
            server.close();
            sb.kill("SIGKILL");
            await running;
            await other.destroy();
          }
        },
      );

      test("kill", "kill() stops a running step: SIGTERM, and SIGKILL for a step that ignores it", async () => {
        const chunks: string[] = [];
        const started = () => chunks.join("").includes("started");
        const pending = sb.runStep(
          "echo started; sleep 600",
          { PATH: "/usr/local/bin:/usr/bin:/bin" },
          {},
          (c) => chunks.push(c.toString()),
          () => undefined,
        );
        while (!started()) await new Promise((r) => setTimeout(r, 20));
        sb.kill("SIGTERM");
        expect(killedBy(await pending)).toBe("SIGTERM");
        chunks.length = 0;
        const stubborn = sb.runStep(
          "trap '' TERM; echo started; while :; do sleep 1; done",
          { PATH: "/usr/local/bin:/usr/bin:/bin" },
          {},
          (c) => chunks.push(c.toString()),
          () => undefined,
        );
        while (!started()) await new Promise((r) => setTimeout(r, 20));
        sb.kill("SIGTERM");
        await new Promise((r) => setTimeout(r, 500));
        sb.kill("SIGKILL");
        expect(killedBy(await stubborn)).toBe("SIGKILL");
      });
    });

    test(
      "isolation",
      "a job cannot see another job's files, and nothing a job writes reaches the next one",
      async () => {
        const a = await newSandbox();
        const b = await newSandbox();
        // Unique host-wide names: a leftover of an earlier (failed) run must not decide this one.
        const tag = randomUUID();
        try {
          const write = await runCaptured(
            a,
            `echo s1 > secret.txt; echo s2 > "$HOME/.secret"; echo s3 > "$TMPDIR/secret"; (echo s4 > /kiln-root-secret-${tag}) 2>/dev/null; (echo s5 > /tmp/kiln-secret-${tag}) 2>/dev/null; (echo s6 > /dev/shm/kiln-secret-${tag}) 2>/dev/null; echo ok`,
          );
          expect(write.out).toBe("ok\n");
          const aRoot = path.dirname(a.hostWorkspaceDir);
          // A root step trying to take the hiding away first (umount of what covers the work dir).
          const escape = `umount -l "${path.dirname(aRoot)}" 2>/dev/null; umount -l "${path.dirname(aRoot)}" 2>/dev/null; `;
          const probe = `${escape}cat secret.txt "$HOME/.secret" "$TMPDIR/secret" /kiln-root-secret-${tag} /tmp/kiln-secret-${tag} /dev/shm/kiln-secret-${tag} "${a.paths.workspace}/secret.txt" "${aRoot}/workspace/secret.txt" 2>/dev/null; ls -A . "$HOME" "$TMPDIR" | grep -v ":$" | grep -v "^$"; ls -A "${path.dirname(aRoot)}" 2>/dev/null | grep -x "${path.basename(aRoot)}"; (cd ../.. && ls -A) 2>/dev/null | grep -x "${path.basename(aRoot)}"; true`;
          const seen = await runCaptured(b, probe);
          expect(seen.out).not.toMatch(/s1|s2|s3|s4|s5|s6/);
          expect(seen.out).not.toContain(path.basename(aRoot));
          await a.destroy();
          const next = await newSandbox();
          try {
            const after = await runCaptured(next, `${probe}; echo "leaked=\${LEAKED:-no}"`);
            expect(after.out).toBe("leaked=no\n");
          } finally {
            await next.destroy();
          }
        } finally {
          await a.destroy();
          await b.destroy();
          // A driver that let the writes through must not leave them on the host.
          await Promise.all(
            [`/kiln-root-secret-${tag}`, `/tmp/kiln-secret-${tag}`, `/dev/shm/kiln-secret-${tag}`].map((f) =>
              rm(f, { force: true }),
            ),
          );
        }
      },
    );

    test("destroy", "after destroy no process, disk image or socket of the sandbox is left", async () => {
      const sb = await newSandbox();
      const root = path.dirname(sb.hostWorkspaceDir);
      const chunks: string[] = [];
      const pending = sb.runStep(
        "sleep 1000 & setsid sleep 1000 >/dev/null 2>&1 & echo ready; wait",
        { PATH: "/usr/local/bin:/usr/bin:/bin" },
        {},
        (c) => chunks.push(c.toString()),
        () => undefined,
      );
      while (!chunks.join("").includes("ready")) await new Promise((r) => setTimeout(r, 20));
      expect((await processesReferencing(root)).length).toBeGreaterThan(0);
      await Promise.all([sb.destroy(), sb.destroy()]); // idempotent, concurrent-safe
      await pending.catch(() => undefined);
      expect(await waitForNoProcesses(root)).toEqual([]);
      expect(await exists(root)).toBe(false);
      await sb.destroy();
    });

    test("leftovers", "a restarted agent removes the sandboxes (and their processes) a crashed one left", async () => {
      const sb = await newSandbox();
      const root = path.dirname(sb.hostWorkspaceDir);
      await runCaptured(sb, "echo data > file");
      const restarted = await t.restart();
      try {
        expect(await restarted.removeLeftovers()).toBeGreaterThanOrEqual(1);
        expect(await waitForNoProcesses(root)).toEqual([]);
        expect(await exists(root)).toBe(false);
      } finally {
        await restarted.close?.();
        await sb.destroy();
      }
    });

    test("agent-sigkill", "no step outlives an agent killed with SIGKILL", async () => {
      const [file, ...args] = t.childAgentArgv();
      const child = spawn(file!, args, { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      child.stdout.on("data", (c: Buffer) => (out += c.toString()));
      const exited = new Promise((r) => child.once("exit", r));
      while (!out.includes("READY ")) {
        if (child.exitCode !== null) throw new Error(`child agent exited early: ${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
      const root = /READY (\S+)/.exec(out)![1]!;
      expect((await processesReferencing(root)).length).toBeGreaterThan(0);
      child.kill("SIGKILL");
      await exited;
      const survivors = await waitForNoProcesses(root, 5_000);
      // Clean up for the next case either way, then judge.
      const restarted = await t.restart();
      await restarted.removeLeftovers();
      await restarted.close?.();
      expect(survivors).toEqual([]);
    });
  });
}
