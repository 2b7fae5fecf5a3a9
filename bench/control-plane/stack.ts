import { spawn, type ChildProcess } from "node:child_process";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDb, ensureDatabase, migrateDatabase, sqlPool, type Db } from "@kiln/db";
import { startPostgres } from "@kiln/testkit";
import { PgBoss } from "pg-boss";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/**
 * A benchmark stack: a durable embedded PostgreSQL (default fsync settings, unlike the test
 * harness), migrations, and the production web server and workers as separate processes.
 */
export class BenchStack {
  db!: Db;
  url = "";
  base = "";
  private tmp = "";
  private stopPg: (() => Promise<void>) | null = null;
  private procs: ChildProcess[] = [];
  private workers: ChildProcess | null = null;
  private web: ChildProcess | null = null;

  async start(port: number, env: Record<string, string> = {}): Promise<void> {
    this.tmp = await mkdtemp(path.join(os.tmpdir(), "kiln-bench-"));
    await chmod(this.tmp, 0o755);
    const pg = await startPostgres({ dataDir: path.join(this.tmp, "pg") });
    this.stopPg = pg.stop;
    this.url = pg.url.replace(/\/postgres$/, "/kiln");
    await ensureDatabase(this.url);
    await migrateDatabase(this.url);
    const boss = new PgBoss({ connectionString: this.url, max: 2 });
    await boss.start();
    await boss.stop({ graceful: false, close: true });
    this.db = createDb({ url: this.url, max: 10 });
    const common = {
      ...process.env,
      DATABASE_URL: this.url,
      NEXT_TELEMETRY_DISABLED: "1",
      KILN_DATA_DIR: path.join(this.tmp, "data"),
      ...env,
    };
    this.workers = spawn(process.execPath, ["--import", "tsx", "apps/workers/src/index.ts"], {
      cwd: ROOT,
      env: common,
      stdio: "ignore",
    });
    this.procs.push(this.workers);
    // KILN_BENCH_WEB_PROFILE=<dir>: the web server runs under --cpu-prof and is stopped with SIGINT,
    // so its CPU profile lands in <dir> (how the claim and ingest hot spots were found).
    const profileDir = process.env.KILN_BENCH_WEB_PROFILE;
    this.web = profileDir
      ? spawn(
          process.execPath,
          [
            "--cpu-prof",
            `--cpu-prof-dir=${profileDir}`,
            path.join(ROOT, "node_modules/next/dist/bin/next"),
            "start",
            "-p",
            String(port),
            "-H",
            "127.0.0.1",
          ],
          { cwd: path.join(ROOT, "apps/web"), env: common, stdio: "ignore" },
        )
      : spawn(path.join(ROOT, "node_modules/.bin/next"), ["start", "-p", String(port), "-H", "127.0.0.1"], {
          cwd: path.join(ROOT, "apps/web"),
          env: common,
          stdio: "ignore",
        });
    this.procs.push(this.web);
    this.base = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        if ((await fetch(`${this.base}/healthz`)).ok) break;
      } catch {
        // starting
      }
      if (Date.now() > deadline) throw new Error("web did not start");
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** A host agent process; `onLogLine` receives its JSON log lines (stdout) when given. */
  spawnAgent(token: string, extra: Record<string, string>, onLogLine?: (line: string) => void): ChildProcess {
    const child = spawn(process.execPath, ["--import", "tsx", "apps/host-agent/src/index.ts"], {
      cwd: ROOT,
      env: {
        ...process.env,
        KILN_CONTROL_URL: this.base,
        KILN_AGENT_TOKEN: token,
        KILN_WORK_DIR: path.join(this.tmp, `agent-${this.procs.length}`),
        ...extra,
      },
      stdio: ["ignore", onLogLine ? "pipe" : "ignore", "ignore"],
    });
    if (onLogLine && child.stdout) {
      let buffered = "";
      child.stdout.setEncoding("utf8").on("data", (c: string) => {
        buffered += c;
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const l of lines) onLogLine(l);
      });
    }
    this.procs.push(child);
    return child;
  }

  /**
   * Freezes the workers process (SIGSTOP) or lets it go on (SIGCONT): measures the web's accept
   * path alone, as when the workers run on other machines; the backlog is frozen on resume.
   */
  pauseWorkers(paused: boolean): void {
    this.workers?.kill(paused ? "SIGSTOP" : "SIGCONT");
  }

  async stop(): Promise<void> {
    this.pauseWorkers(false);
    if (process.env.KILN_BENCH_WEB_PROFILE && this.web && this.web.exitCode === null) {
      const exited = new Promise((res) => this.web?.once("exit", res));
      this.web.kill("SIGINT");
      await Promise.race([exited, new Promise((res) => setTimeout(res, 10_000))]);
    }
    for (const p of this.procs) p.kill("SIGKILL");
    await this.db?.$disconnect();
    // Close the Db's own pool too before the server goes: an idle client of it, cut by the
    // shutdown, crashed the bench after its figures were printed (and before they were saved).
    if (this.db)
      await sqlPool(this.db)
        .end()
        .catch(() => undefined);
    await this.stopPg?.();
    await rm(this.tmp, { recursive: true, force: true });
  }
}
