// `npm run up`: the whole platform in the foreground. Uses DATABASE_URL / REDIS_URL / S3_ENDPOINT
// when given, otherwise starts embedded PostgreSQL, Redis and an S3-compatible server under
// KILN_DATA_DIR; applies migrations; seeds a demo org, repo and tokens; starts web, workers and
// KILN_AGENTS host agents. Ctrl-C stops everything it started.
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDb, ensureDatabase, migrateDatabase } from "@kiln/db";
import { addMember, addRepo, createAgentToken, createApiToken, createOrg } from "@kiln/engine";
import { PgBoss } from "pg-boss";
import { startPostgres, startRedis, startS3 } from "./lib/embedded-services.ts";
import { BUSYBOX, publishBaseImage } from "./lib/base-image.ts";
import { startRegistry } from "./lib/oci-registry.ts";
import { ProcessGroup, run, waitForHttp } from "./lib/processes.ts";
import { webBuildIsStale } from "./lib/web-build.ts";
import { createDemoRepo } from "./lib/demo-repo.ts";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PORT = Number(process.env.PORT ?? 3000);
const DATA = path.resolve(process.env.KILN_DATA_DIR ?? path.join(ROOT, ".kiln-data"));
const AGENTS = Number(process.env.KILN_AGENTS ?? 1);
const stops: (() => Promise<void>)[] = [];
const group = new ProcessGroup();

async function main(): Promise<void> {
  await mkdir(DATA, { recursive: true });
  const log = (m: string) => console.log(`[up] ${m}`);

  let databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) {
    log("DATABASE_URL not set: starting embedded PostgreSQL");
    const pg = await startPostgres({ dataDir: path.join(DATA, "postgres") });
    stops.push(pg.stop);
    databaseUrl = pg.url.replace(/\/postgres$/, "/kiln");
  }
  await ensureDatabase(databaseUrl);
  await migrateDatabase(databaseUrl, log);
  // pg-boss's schema, created once here so web and workers can start in any order.
  const boss = new PgBoss({ connectionString: databaseUrl, max: 2 });
  await boss.start();
  await boss.stop({ graceful: false, close: true });

  let redisUrl = process.env.REDIS_URL;
  if (!redisUrl) {
    log("REDIS_URL not set: starting a local redis-server");
    const redis = await startRedis({ dataDir: path.join(DATA, "redis") });
    stops.push(redis.stop);
    redisUrl = redis.url;
  }
  let s3Endpoint = process.env.S3_ENDPOINT;
  if (!s3Endpoint) {
    log("S3_ENDPOINT not set: starting a local S3-compatible server (s3rver)");
    const s3 = await startS3({ dataDir: path.join(DATA, "s3"), bucket: "kiln" });
    stops.push(s3.stop);
    s3Endpoint = s3.endpoint;
  }

  // Images (ADR 0012): a local OCI registry (Debian's docker-registry) with the platform's base image,
  // pinned by digest at freeze and pulled by the agents. Skipped, and said so, where it is missing.
  let registries: string | undefined = process.env.KILN_REGISTRIES;
  let poolImages: string | undefined = process.env.KILN_POOL_IMAGES;
  if (!registries && existsSync("/usr/bin/docker-registry") && existsSync(BUSYBOX)) {
    log("KILN_REGISTRIES not set: starting a local OCI registry and publishing the base image");
    const reg = await startRegistry({ dataDir: path.join(DATA, "registry") });
    stops.push(reg.stop);
    const img = await publishBaseImage({ registry: reg.host });
    registries = JSON.stringify({ [reg.host]: {} });
    poolImages ??= JSON.stringify({ default: img.ref });
    log(`base image ${img.ref} = ${img.manifestDigest}`);
  } else if (!registries) {
    log(
      "no docker-registry/busybox-static here (apt-get install docker-registry busybox-static): jobs without an image run on the pool's host root",
    );
  }

  const db = createDb({ url: databaseUrl, max: 2 });
  const demo = await seedDemo(db);
  await db.$disconnect();
  await writeFile(
    path.join(DATA, "instance.json"),
    JSON.stringify({ databaseUrl, redisUrl, s3Endpoint, port: PORT }, null, 2),
  );

  // Session signing key for the dashboard, kept across restarts so sign-ins survive them.
  const authSecretFile = path.join(DATA, "auth-secret");
  if (!existsSync(authSecretFile))
    await writeFile(authSecretFile, randomBytes(32).toString("base64url"), { mode: 0o600 });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    S3_ENDPOINT: s3Endpoint,
    KILN_DATA_DIR: DATA,
    NEXT_TELEMETRY_DISABLED: "1",
    // Local use only: a member's login signs in without a password (refused unless this is set).
    KILN_DEV_LOGIN: "1",
    AUTH_SECRET: process.env.AUTH_SECRET ?? (await readFile(authSecretFile, "utf8")).trim(),
    AUTH_URL: process.env.AUTH_URL ?? `http://127.0.0.1:${PORT}`,
    AUTH_TRUST_HOST: "true",
    ...(registries ? { KILN_REGISTRIES: registries } : {}),
    ...(poolImages ? { KILN_POOL_IMAGES: poolImages } : {}),
  };
  if (webBuildIsStale(ROOT)) {
    log("building the web app (next build)");
    await run("next", ["build"], { cwd: path.join(ROOT, "apps/web"), env });
  }
  // `node --import tsx`: one OS process each, so they can be frozen or killed by pid.
  group.start("workers", process.execPath, ["--import", "tsx", "apps/workers/src/index.ts"], { cwd: ROOT, env });
  group.start("web", "next", ["start", "-p", String(PORT), "-H", "127.0.0.1"], {
    cwd: path.join(ROOT, "apps/web"),
    env,
  });
  await waitForHttp(`http://127.0.0.1:${PORT}/healthz`, 60_000);
  for (let i = 0; i < AGENTS; i++) {
    group.start(`agent-${i + 1}`, process.execPath, ["--import", "tsx", "apps/host-agent/src/index.ts"], {
      cwd: ROOT,
      env: {
        ...env,
        KILN_CONTROL_URL: `http://127.0.0.1:${PORT}`,
        KILN_AGENT_TOKEN: demo.agentToken,
        KILN_WORK_DIR: path.join(DATA, `agent-${i + 1}`),
      },
    });
  }
  const base = `http://127.0.0.1:${PORT}`;
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
  Demo org:        demo (member: demo-dev; dev sign-in enabled, KILN_DEV_LOGIN=1)
  Demo repo:       demo/app  id ${demo.repoId}  (${demo.cloneUrl})
  API token:       ${demo.apiToken}
  Webhook secret:  ${demo.webhookSecret}   (POST ${base}/v1/webhooks/github)
  Host agents:     ${AGENTS}
  First demo run:  ${trigger.run_id ?? "(trigger failed)"}

  curl -s -H "Authorization: Bearer ${demo.apiToken}" ${base}/v1/workflow-runs/${trigger.run_id ?? "<run_id>"}
  curl -s -X POST -H "Authorization: Bearer ${demo.apiToken}" -H "Idempotency-Key: $(date +%s)" -H "content-type: application/json" \\
    -d '{"workflow_path":".kiln/workflow.yaml","commit_sha":"${demo.commitSha}"}' ${base}/v1/repos/${demo.repoId}/workflow-runs

Ctrl-C stops everything.`);
}

async function seedDemo(db: ReturnType<typeof createDb>) {
  await createOrg(db, "demo");
  await addMember(db, { orgSlug: "demo", login: "demo-dev", role: "admin" });
  const repoDir = path.join(DATA, "demo-repo");
  const { cloneUrl, commitSha } = await createDemoRepo(repoDir);
  // The secret survives restarts so a forge configured once keeps working.
  const secretFile = path.join(DATA, "webhook-secret");
  if (!existsSync(secretFile)) await writeFile(secretFile, randomBytes(16).toString("hex"), { mode: 0o600 });
  const webhookSecret = (await readFile(secretFile, "utf8")).trim();
  const repo = await addRepo(db, {
    orgSlug: "demo",
    name: "demo/app",
    cloneUrl,
    webhookSecret,
    workflowPath: ".kiln/workflow.yaml",
  });
  const api = await createApiToken(db, { orgSlug: "demo", role: "admin", name: "up" });
  const agent = await createAgentToken(db, { pool: "default" });
  return { repoId: repo.id, cloneUrl, commitSha, apiToken: api.token, agentToken: agent.token, webhookSecret };
}

let shuttingDown = false;
async function shutdown(code: number): Promise<never> {
  if (!shuttingDown) {
    shuttingDown = true;
    console.log("[up] stopping");
    await group.stopAll();
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
  process.exit(code);
}
process.on("SIGINT", () => void shutdown(0));
process.on("SIGTERM", () => void shutdown(0));

main().catch(async (e: unknown) => {
  console.error(`[up] failed: ${e instanceof Error ? e.message : String(e)}`);
  await shutdown(1);
});
