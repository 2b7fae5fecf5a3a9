// Issue 28, from the hostile side: a process host without user namespaces must not quietly run
// steps as plain host processes and still call itself `process`. The agent here runs on a "host"
// where creating a user namespace fails (user.max_user_namespaces = 0 inside a user namespace of
// the test's own, so the real host is untouched), which the view needs for every step. By default it refuses to start, naming the cause and the way out; only with the
// operator's explicit development flag does it start, as isolation `none` (which placement then
// admits only in a development pool: packages/domain/src/dispatch/placement.test.ts).
import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const child = fileURLToPath(new URL("./unprivileged-agent-child.ts", import.meta.url));

/** Runs the child agent (root of its namespace) on a "host" whose kernel refuses new user namespaces. */
async function agentWithoutUserNamespaces(dir: string, flag: string): Promise<{ code: number; out: string }> {
  const inner = ["echo 0 > /proc/sys/user/max_user_namespaces || exit 97", 'exec "$@"'].join("; ");
  const argv = [
    ...["--user", "--map-root-user", "--", "/bin/sh", "-c", inner, "sh"],
    ...[process.execPath, "--import", "tsx", child, path.join(dir, "work"), "id -u", flag],
  ];
  return promisify(execFile)("/usr/bin/unshare", argv, {
    cwd: process.cwd(),
    env: { PATH: "/usr/bin:/bin", HOME: dir },
    timeout: 50_000,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, out: stdout + stderr }),
    (e: { code?: number; stdout?: string; stderr?: string }) => ({
      code: typeof e.code === "number" ? e.code : -1,
      out: `${e.stdout ?? ""}${e.stderr ?? ""}`,
    }),
  );
}

describe.runIf(process.getuid?.() === 0)("process driver: no user namespaces fails closed", () => {
  it("refuses to start without the development flag, and says why and what to do", { timeout: 60_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-no-userns-"));
    try {
      const r = await agentWithoutUserNamespaces(dir, "");
      expect(r.code, r.out).not.toBe(0);
      expect(r.code, r.out).not.toBe(97);
      expect(r.out).toContain("the process driver cannot isolate steps on this host");
      expect(r.out).toContain("KILN_ALLOW_UNISOLATED=true");
      expect(r.out).not.toContain("exit=");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("starts as isolation `none` only when the operator says so", { timeout: 60_000 }, async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "kiln-no-userns-"));
    try {
      const r = await agentWithoutUserNamespaces(dir, "allow-unisolated");
      expect(r.code, r.out).toBe(0);
      // The step runs as the agent's own user: exactly why this needs the operator's word.
      expect(r.out).toBe("isolation=none\n0\nexit=0\n");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
