// A private redis-server (the system binary; Redis is not on npm) on a free loopback port, with
// no persistence: live log fan-out and caches only.
import { spawn } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { killChild, once, tailBuffer } from "./child-process.ts";
import { assertPortFree, withPort } from "./free-port.ts";

export interface RedisHandle {
  url: string;
  stop(): Promise<void>;
}

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
