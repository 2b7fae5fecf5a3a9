// Starts Debian's docker-registry (the CNCF distribution registry, API v2) on 127.0.0.1 with our
// own config and a throwaway filesystem store, for `npm run up` and tests. Never the system service.
import { execFile, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { randomBytes } from "node:crypto";
import { freePort } from "./free-port.ts";

const execFileAsync = promisify(execFile);
export const REGISTRY_BIN = "/usr/bin/docker-registry";
const HTPASSWD_BIN = "/usr/bin/htpasswd";

export interface RegistryHandle {
  /** http://127.0.0.1:<port> */
  url: string;
  /** 127.0.0.1:<port>, the registry part of image references. */
  host: string;
  /** Where blobs live (docker/registry/v2/...): tests tamper with it to prove digest checks. */
  storageDir: string;
  stop(): Promise<void>;
}

export interface RegistryOptions {
  dataDir: string;
  port?: number;
  /** htpasswd basic auth (bcrypt, generated with apache2-utils' htpasswd). */
  basicAuth?: { username: string; password: string };
  /** Token auth: the registry trusts JWTs signed by this certificate's key, issued by `realm`. */
  tokenAuth?: { realm: string; service: string; issuer: string; certFile: string };
}

function yaml(opts: RegistryOptions, port: number, storageDir: string, htpasswdFile: string): string {
  const lines = [
    "version: 0.1",
    "log:",
    "  level: warn",
    "  accesslog:",
    "    disabled: true",
    "storage:",
    "  filesystem:",
    `    rootdirectory: ${JSON.stringify(storageDir)}`,
    "  delete:",
    "    enabled: true",
    "http:",
    `  addr: 127.0.0.1:${port}`,
    `  secret: ${randomBytes(16).toString("hex")}`,
  ];
  if (opts.basicAuth)
    lines.push("auth:", "  htpasswd:", "    realm: kiln", `    path: ${JSON.stringify(htpasswdFile)}`);
  if (opts.tokenAuth) {
    const t = opts.tokenAuth;
    lines.push(
      "auth:",
      "  token:",
      `    realm: ${JSON.stringify(t.realm)}`,
      `    service: ${JSON.stringify(t.service)}`,
      `    issuer: ${JSON.stringify(t.issuer)}`,
      `    rootcertbundle: ${JSON.stringify(t.certFile)}`,
    );
  }
  return `${lines.join("\n")}\n`;
}

async function waitReady(url: string, child: ReturnType<typeof spawn>, log: () => string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`docker-registry exited during startup:\n${log()}`);
    try {
      const res = await fetch(`${url}/v2/`, { signal: AbortSignal.timeout(1000) });
      await res.body?.cancel();
      if (res.status === 200 || res.status === 401) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) throw new Error(`docker-registry did not answer /v2/ within 15 s:\n${log()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function startRegistry(opts: RegistryOptions): Promise<RegistryHandle> {
  if (!existsSync(REGISTRY_BIN))
    throw new Error(`${REGISTRY_BIN} not found: apt-get install docker-registry (Debian's distribution registry)`);
  const dataDir = path.resolve(opts.dataDir);
  const storageDir = path.join(dataDir, "storage");
  await mkdir(storageDir, { recursive: true });
  const htpasswdFile = path.join(dataDir, "htpasswd");
  if (opts.basicAuth) {
    if (!existsSync(HTPASSWD_BIN))
      throw new Error(
        `${HTPASSWD_BIN} not found: apt-get install apache2-utils (the registry wants bcrypt htpasswd entries)`,
      );
    const { stdout } = await execFileAsync(HTPASSWD_BIN, ["-Bbn", opts.basicAuth.username, opts.basicAuth.password]);
    await writeFile(htpasswdFile, stdout, { mode: 0o600 });
  }
  const port = opts.port ?? (await freePort());
  const configFile = path.join(dataDir, "config.yml");
  await writeFile(configFile, yaml(opts, port, storageDir, htpasswdFile));
  const tail: string[] = [];
  const child = spawn(REGISTRY_BIN, ["serve", configFile], { stdio: ["ignore", "pipe", "pipe"] });
  const keep = (d: Buffer) => {
    tail.push(...d.toString("utf8").split("\n").filter(Boolean));
    tail.splice(0, Math.max(0, tail.length - 40));
  };
  child.stdout.on("data", keep);
  child.stderr.on("data", keep);
  child.on("error", (err) => tail.push(String(err)));
  // Never leave an orphan registry behind if the Node process exits without stop().
  const onExit = () => {
    child.kill("SIGKILL");
  };
  process.once("exit", onExit);
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      process.off("exit", onExit);
      if (child.exitCode === null && child.signalCode === null) {
        const exited = new Promise<void>((r) => child.once("exit", () => r()));
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
        await exited;
        clearTimeout(timer);
      }
    })());
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitReady(url, child, () => tail.join("\n"));
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, host: `127.0.0.1:${port}`, storageDir, stop };
}
