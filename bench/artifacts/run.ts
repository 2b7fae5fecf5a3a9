// Artifact transfer benchmark (issue 5). One run, one endpoint, the same bytes:
//   upload+seal     = the host agent's uploadArtifact (64 MiB parts, 4 in flight, per-part SHA-256,
//                     part records) + the control plane's finaliser (CompleteMultipartUpload, then
//                     the store's multipart ETag checked against the part MD5s, or a full SHA-256
//                     read-back when it cannot vouch) — versus one plain SDK PutObject of the file;
//   download+verify = the agent's restoreArtifact (grant, GET into the spool with SHA-256, verify,
//                     place) — versus one plain SDK GetObject into a file.
// Freezing (copy into the spool + SHA-256) is timed separately: PutObject has no equivalent step.
// --stock-s3rver runs s3rver 3.7 as published (it rewrites the object with a full MD5 on completion,
// so its ETag is not S3's multipart form and the finaliser reads every artifact back): the path
// before docs/adr/0007-artifacts.md "Embedded store" and "Verification by the store's part digests".
// --shred (issue 21, docs/adr/0037) seals the frozen file before upload+seal and opens the restored
// object after download+verify, both inside the timed steps, as the agent does with encryption on.
// Usage: npm run bench -- artifacts [--mib 1024] [--rounds 2] [--dir /path/on/disk] [--stock-s3rver] [--shred]
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, open, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { DeleteObjectCommand, GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { createDb, ensureDatabase, migrateDatabase, withTx } from "@kiln/db";
import { parseWorkflow } from "@kiln/domain";
import {
  addRepo,
  claimJob,
  completeAttempt,
  createAgentToken,
  setPoolPolicy,
  createObjectStore,
  createOrg,
  DEFAULT_ARTIFACT_SETTINGS,
  DEFAULT_ENGINE_CONFIG,
  registerSession,
  type ArtifactStore,
  type JobClaims,
  type JobTicket,
  createJobs,
} from "@kiln/engine";
import { startPostgres, startS3Process } from "@kiln/testkit";
import { freezeArtifact, restoreArtifact, uploadArtifact } from "@kiln/host-agent/artifacts";
import { ControlClient } from "@kiln/host-agent/control-client";
import { createLogger } from "@kiln/logger";
import { median } from "../lib/stats.ts";
import { inProcessFetch } from "./control-plane.ts";
import { benchDataKey, openFile, sealFile } from "./shred-passes.ts";

const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const MIB = Number(arg("mib", "1024"));
const ROUNDS = Number(arg("rounds", "2"));
const SIZE = MIB * 1024 * 1024;
const SHRED = process.argv.includes("--shred");
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const CFG = { ...DEFAULT_ENGINE_CONFIG, leaseTtlMs: 3_600_000 };
const WORKFLOW = `version: 1
jobs:
  - name: compile
    steps: ["true"]
    artifacts: {publish: [{name: app, path: app.bin}]}
  - name: test
    steps: ["true"]
    artifacts: {restore: [{from_job: compile, name: app, path: inputs/app.bin}]}
`;

/**
 * Every timed step starts with the page cache's dirty data written out: a round dirties ~5 GiB
 * (object, spool, parts, assembly, downloads) on a ~270 MB/s disk, and without this the kernel's
 * write-back throttled whichever step came later (the Kiln download runs after the GetObject).
 */
async function timed<T>(f: () => Promise<T>): Promise<[number, T]> {
  spawnSync("sync");
  const t0 = performance.now();
  const v = await f();
  return [performance.now() - t0, v];
}

async function writeRandomFile(file: string, size: number): Promise<void> {
  const fh = await open(file, "w");
  const chunk = 8 * 1024 * 1024;
  for (let off = 0; off < size; off += chunk) await fh.write(randomBytes(Math.min(chunk, size - off)));
  await fh.close();
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(arg("dir", os.tmpdir()), "kiln-bench-art-"));
  progress(`working in ${root}; ${MIB} MiB x ${ROUNDS} rounds`);
  const pg = await startPostgres({ dataDir: path.join(root, "pg") });
  const stock = process.argv.includes("--stock-s3rver");
  const s3h = await startS3Process({ dataDir: path.join(root, "s3"), stock });
  const url = pg.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 8 });
  const s3 = createObjectStore({
    endpoint: s3h.endpoint,
    region: s3h.region,
    accessKeyId: s3h.accessKeyId,
    secretAccessKey: s3h.secretAccessKey,
  });
  const store: ArtifactStore = { s3, bucket: "kiln", settings: DEFAULT_ARTIFACT_SETTINGS };
  // s3rver assembles a multipart object by rewriting it (a full copy + MD5); S3 does it in metadata.
  const assemblyMs: number[] = [];
  s3.middlewareStack.add(
    (next, context) => async (args) => {
      if (context.commandName !== "CompleteMultipartUploadCommand") return next(args);
      const t0 = performance.now();
      try {
        return await next(args);
      } finally {
        assemblyMs.push(performance.now() - t0);
      }
    },
    { step: "initialize", name: "benchTimeAssembly" },
  );
  const log = createLogger({ service: "bench" });
  const rows: {
    put: number;
    freeze: number;
    upload: number;
    finalize: number;
    assembly: number;
    get: number;
    download: number;
  }[] = [];
  const finalizeMs: number[] = [];
  const verifiedBy: string[] = [];
  try {
    const org = await createOrg(db, "bench");
    const repo = await addRepo(
      db,
      {
        orgSlug: "bench",
        name: "bench/app",
        cloneUrl: "file:///none",
        webhookSecret: "bench-secret",
        workflowPath: ".kiln/workflow.yaml",
      },
      { localReposRoot: "/" },
    );
    await setPoolPolicy(db, { name: "bench", minIsolation: "process", development: true, actor: "bench" });
    const agentToken = await createAgentToken(db, { pool: "bench" });
    const session = await registerSession(db, CFG, {
      agentTokenId: agentToken.id,
      pool: "bench",
      body: {
        hostname: "bench",
        capacity: 64,
        labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
      },
    });
    const parsed = parseWorkflow(WORKFLOW);
    if (!parsed.ok) throw new Error(parsed.error.message);
    const source = path.join(root, "source.bin");
    progress(`writing ${MIB} MiB of random bytes`);
    await writeRandomFile(source, SIZE);

    for (let round = 1; round <= ROUNDS; round++) {
      const work = path.join(root, `round-${round}`);
      const ws = path.join(work, "workspace");
      await mkdir(ws, { recursive: true });
      // Plain SDK PutObject of the same bytes to the same endpoint.
      const [put] = await timed(() =>
        s3.send(
          new PutObjectCommand({
            Bucket: "kiln",
            Key: `baseline/${round}`,
            Body: createReadStream(source),
            ContentLength: SIZE,
          }),
        ),
      );
      progress(`round ${round}: PutObject ${(put / 1000).toFixed(2)} s`);

      const runId = await withTx(db, "bench-run", async (tx) => {
        const r = await tx.$queryRaw<{ id: string }[]>`
          INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
          VALUES (${org.id}::uuid, ${repo.id}::uuid, 'running', 'trusted', 'manual', ${"b".repeat(40)}, '.kiln/workflow.yaml', 'h', ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
        await createJobs(tx, { id: r[0]!.id, orgId: org.id }, parsed.definition, "bench");
        return r[0]!.id;
      });
      const tickets = new Map<string, JobTicket>();
      const claimsFor = (jobId: string): JobClaims => {
        const t = tickets.get(jobId);
        if (!t) throw new Error("unknown job");
        return { attemptId: t.attemptId, jobId: t.jobId, epoch: t.epoch };
      };
      const inner = inProcessFetch(db, store, claimsFor);
      // Times the finaliser call (CompleteMultipartUpload + verification + seal) inside upload+seal.
      const client = new ControlClient("http://in-process", "unused", async (input, init) => {
        const t0 = performance.now();
        const r = await inner(input, init);
        if (String(input).endsWith("/complete")) finalizeMs.push(performance.now() - t0);
        return r;
      });
      const claim = async () => {
        const c = await claimJob(db, CFG, { sessionId: session.sessionId, claimRequestId: randomUUID() });
        if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
        tickets.set(c.ticket.jobId, c.ticket);
        return c.ticket;
      };

      const producer = await claim();
      await pipeline(createReadStream(source), createWriteStream(path.join(ws, "app.bin")));
      const spool = path.join(work, "spool");
      await mkdir(spool);
      const [freeze, frozen] = await timed(() => freezeArtifact(ws, spool, { name: "app", path: "app.bin" }));
      if (!frozen.ok) throw new Error(frozen.message);
      const signal = new AbortController().signal;
      const dataKey = benchDataKey();
      const [upload, up] = await timed(async () => {
        if (!SHRED) return uploadArtifact(frozen.artifact, { client, ticket: producer, log, signal });
        // Sealed beside the spool, then the sealed file is what the parts carry.
        const sealed = await sealFile(dataKey, frozen.artifact.file, path.join(spool, "app.sealed"));
        return uploadArtifact({ ...frozen.artifact, ...sealed }, { client, ticket: producer, log, signal });
      });
      if (!up.ok) throw new Error(JSON.stringify(up.failure));
      const how = await db.$queryRaw<{ v: string | null }[]>`
        SELECT data->>'verified_by' AS v FROM transition_event WHERE entity = 'artifact' AND to_state = 'sealed' AND data->>'generation_id' = ${up.generationId}`;
      verifiedBy.push(how[0]?.v ?? "?");
      progress(
        `round ${round}: freeze ${(freeze / 1000).toFixed(2)} s, upload+seal ${(upload / 1000).toFixed(2)} s (verified by ${verifiedBy.at(-1)})`,
      );
      await completeAttempt(db, CFG, {
        attemptId: producer.attemptId,
        jobId: producer.jobId,
        epoch: producer.epoch,
        outcome: "success",
        sandboxDestroyed: true,
      });
      await rm(spool, { recursive: true, force: true });
      await rm(path.join(ws, "app.bin"));

      // Plain SDK GetObject of the same bytes into a file.
      const [get] = await timed(async () => {
        const r = await s3.send(new GetObjectCommand({ Bucket: "kiln", Key: `baseline/${round}` }));
        await pipeline(r.Body as NodeJS.ReadableStream, createWriteStream(path.join(work, "baseline.bin")));
      });
      await rm(path.join(work, "baseline.bin"));
      const consumer = await claim();
      const spool2 = path.join(work, "spool2");
      await mkdir(spool2);
      const [download, down] = await timed(async () => {
        const r = await restoreArtifact(
          { fromJob: "compile", name: "app", path: "inputs/app.bin" },
          { client, ticket: consumer, log, signal, workspaceDir: ws, spoolDir: spool2 },
        );
        if (!SHRED || !r.ok) return r;
        const plainSha = await openFile(dataKey, path.join(ws, "inputs/app.bin"), path.join(ws, "inputs/app.plain"));
        if (plainSha !== frozen.artifact.sha256) throw new Error("opened bytes differ from the frozen plaintext");
        return { ...r, sizeBytes: SIZE };
      });
      if (!down.ok) throw new Error(JSON.stringify(down));
      if (down.sizeBytes !== SIZE || up.generationId !== down.generationId)
        throw new Error("restored the wrong generation");
      progress(
        `round ${round}: GetObject ${(get / 1000).toFixed(2)} s, download+verify ${(download / 1000).toFixed(2)} s`,
      );
      rows.push({
        put,
        freeze,
        upload,
        finalize: finalizeMs.at(-1) ?? 0,
        assembly: assemblyMs.at(-1) ?? 0,
        get,
        download,
      });
      await rm(work, { recursive: true, force: true });
      // Every round starts from the same store: earlier rounds' objects (2 GiB each) otherwise filled
      // the page cache round after round, and later rounds measured memory pressure, not transfers.
      const key = await db.$queryRaw<
        { object_key: string }[]
      >`SELECT object_key FROM artifact_generation WHERE id = ${up.generationId}::uuid`;
      for (const k of [`baseline/${round}`, key[0]?.object_key ?? ""])
        if (k) await s3.send(new DeleteObjectCommand({ Bucket: "kiln", Key: k }));
      void runId;
    }
  } finally {
    s3.destroy();
    await db.$disconnect();
    await s3h.stop();
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
  const mibs = (msv: number) => (MIB / (msv / 1000)).toFixed(0);
  const m = (k: keyof (typeof rows)[number]) => median(rows.map((r) => r[k]));
  console.log(
    `\nload average at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  console.log(
    `Artifacts${SHRED ? " with crypto-shredding (seal before upload, open after download)" : ""}, ${MIB} MiB, median of ${rows.length} round(s), ${stock ? "stock " : ""}s3rver (own process) on local disk, ${os.cpus().length} vCPU; sealed after: ${[...new Set(verifiedBy)].join(", ")}`,
  );
  console.log(`| path | seconds | MiB/s | ratio to plain SDK |`);
  console.log(`| --- | ---: | ---: | ---: |`);
  console.log(`| plain PutObject | ${(m("put") / 1000).toFixed(2)} | ${mibs(m("put"))} | 1.00 |`);
  console.log(
    `| Kiln upload+seal (parts, records, complete, verify, seal) | ${(m("upload") / 1000).toFixed(2)} | ${mibs(m("upload"))} | ${(m("put") / m("upload")).toFixed(2)} |`,
  );
  console.log(
    `| - of which parts (PUT + SHA-256 per part + part records) | ${((m("upload") - m("finalize")) / 1000).toFixed(2)} | ${mibs(m("upload") - m("finalize"))} | ${(m("put") / (m("upload") - m("finalize"))).toFixed(2)} |`,
  );
  console.log(
    `| - of which the store's CompleteMultipartUpload | ${(m("assembly") / 1000).toFixed(2)} | ${mibs(m("assembly"))} | - |`,
  );
  console.log(
    `| - of which Kiln's verification (ETag vs part MD5s, else SHA-256 read-back) + seal | ${((m("finalize") - m("assembly")) / 1000).toFixed(2)} | ${mibs(m("finalize") - m("assembly"))} | - |`,
  );
  console.log(
    `| Kiln upload+seal without the store's assembly time | ${((m("upload") - m("assembly")) / 1000).toFixed(2)} | ${mibs(m("upload") - m("assembly"))} | ${(m("put") / (m("upload") - m("assembly"))).toFixed(2)} |`,
  );
  console.log(
    `| Kiln freeze (spool copy + SHA-256), before upload | ${(m("freeze") / 1000).toFixed(2)} | ${mibs(m("freeze"))} | - |`,
  );
  console.log(
    `| Kiln freeze+upload+seal | ${((m("freeze") + m("upload")) / 1000).toFixed(2)} | ${mibs(m("freeze") + m("upload"))} | ${(m("put") / (m("freeze") + m("upload"))).toFixed(2)} |`,
  );
  console.log(`| plain GetObject | ${(m("get") / 1000).toFixed(2)} | ${mibs(m("get"))} | 1.00 |`);
  console.log(
    `| Kiln download+verify (grant, GET + SHA-256, place) | ${(m("download") / 1000).toFixed(2)} | ${mibs(m("download"))} | ${(m("get") / m("download")).toFixed(2)} |`,
  );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
