// A benchmark stack: @kiln/testkit's platform with a durable embedded PostgreSQL (default fsync
// settings, unlike the tests' throwaway cluster), and the production web server and workers as
// separate processes whose output is not read (no pipe to drain while measuring).
import type { ChildProcess } from "node:child_process";
import type { Db } from "@kiln/db";
import { bindJobTokenKek, loadOrCreateIdentityKek } from "@kiln/engine";
import { startPlatform, type Platform } from "@kiln/testkit";

export interface BenchServices {
  redis?: boolean;
  s3?: "own-process";
  git?: boolean;
  postgresFlags?: string[];
  /** Sent to the apps first on stop (SIGTERM lets a host agent under --cpu-prof write its profile). */
  stopSignal?: NodeJS.Signals;
}

export class BenchStack {
  db!: Db;
  url = "";
  base = "";
  platform!: Platform;
  private agents = 0;

  constructor(private readonly services: BenchServices = {}) {}

  async start(port: number, env: Record<string, string> = {}): Promise<void> {
    this.platform = await startPlatform({
      postgres: "durable",
      redis: this.services.redis ?? false,
      s3: this.services.s3 ?? false,
      git: this.services.git ?? false,
      ...(this.services.postgresFlags ? { postgresFlags: this.services.postgresFlags } : {}),
      ...(this.services.stopSignal ? { stopSignal: this.services.stopSignal } : {}),
      env,
      output: "ignore",
      dbPoolSize: 10,
    });
    this.db = this.platform.db;
    // In-process claims sign job tokens the web server checks: the same identity KEK (issue 28).
    const kekFile = this.platform.identityKekFile();
    bindJobTokenKek(this.db, () => loadOrCreateIdentityKek(kekFile));
    this.url = this.platform.dbUrl;
    this.platform.startWorkers();
    // KILN_BENCH_WEB_PROFILE=<dir>: the web server runs under --cpu-prof and is stopped with SIGINT,
    // so its CPU profile lands in <dir> (how the claim and ingest hot spots were found).
    const profileDir = process.env.KILN_BENCH_WEB_PROFILE;
    await this.platform.startWeb("web", {
      port,
      healthTimeoutMs: 60_000,
      ...(profileDir ? { nodeFlags: ["--cpu-prof", `--cpu-prof-dir=${profileDir}`], stopSignal: "SIGINT" } : {}),
    });
    this.base = this.platform.baseUrl();
  }

  /** A host agent process; `onLogLine` receives its JSON log lines (stdout) when given. */
  spawnAgent(token: string, extra: Record<string, string>, onLogLine?: (line: string) => void): ChildProcess {
    return this.platform.startAgent(`agent-${++this.agents}`, token, {
      env: extra,
      ...(onLogLine ? { onStdoutLine: onLogLine } : {}),
    }).child;
  }

  /**
   * Freezes the workers process (SIGSTOP) or lets it go on (SIGCONT): measures the web's accept
   * path alone, as when the workers run on other machines; the backlog is frozen on resume.
   */
  pauseWorkers(paused: boolean): void {
    void this.platform.signal("workers", paused ? "SIGSTOP" : "SIGCONT");
  }

  async stop(): Promise<void> {
    await this.platform?.stop();
  }
}
