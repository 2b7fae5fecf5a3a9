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
// --shred (issue 21, docs/adr/0037) adds, in each round beside the clear path, the sealed path as it
// runs with shredding configured: the control plane (with shred keys) plans chunk-aligned parts and
// hands the agent the data key, uploadArtifact seals each part as it PUTs it (putSealedRange +
// PartSealStream, from the plaintext spool), the finaliser checks the store's ETag against the sealed
// parts' MD5s, and restoreArtifact opens the object while downloading (downloadToFile + OpenStream)
// and checks the plaintext's size and SHA-256. The two Kiln variants alternate order per round.
// Usage: npm run bench -- artifacts [--mib 1024] [--rounds 2] [--dir /path/on/disk] [--stock-s3rver] [--shred]
import { spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, mkdtemp, open, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { createDb, ensureDatabase, migrateDatabase, withTx } from "@kiln/db";
import { parseWorkflow, sealedSize, SHRED_DEFAULT_CHUNK_BYTES } from "@kiln/domain";
import {
  bindJobTokenKek,
  kekFromBytes,
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
  generateKekText,
  KekSource,
  PlatformKeyStore,
} from "@kiln/engine";
import { startPostgres, startS3Process } from "@kiln/testkit";
import { freezeArtifact, restoreArtifact, uploadArtifact } from "@kiln/host-agent/artifacts";
import { ControlClient } from "@kiln/host-agent/control-client";
import { createLogger } from "@kiln/logger";
import { median } from "../lib/stats.ts";
import { inProcessFetch } from "./control-plane.ts";

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

type Variant = "clear" | "sealed";
interface KilnTimes {
  freeze: number;
  upload: number;
  finalize: number;
  assembly: number;
  download: number;
  verifiedBy: string;
  partSize: number;
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(arg("dir", os.tmpdir()), "kiln-bench-art-"));
  progress(`working in ${root}; ${MIB} MiB x ${ROUNDS} rounds${SHRED ? ", clear and sealed" : ""}`);
  const pg = await startPostgres({ dataDir: path.join(root, "pg") });
  const stock = process.argv.includes("--stock-s3rver");
  const s3h = await startS3Process({ dataDir: path.join(root, "s3"), stock });
  const url = pg.url.replace(/\/postgres$/, "/kiln");
  await ensureDatabase(url);
  await migrateDatabase(url);
  const db = createDb({ url, max: 8 });
  // No web server reads these keys: a throwaway identity KEK seals them (issue 28).
  bindJobTokenKek(db, kekFromBytes(randomBytes(32)));
  const s3 = createObjectStore({
    endpoint: s3h.endpoint,
    region: s3h.region,
    accessKeyId: s3h.accessKeyId,
    secretAccessKey: s3h.secretAccessKey,
  });
  const store: ArtifactStore = { s3, bucket: "kiln", settings: DEFAULT_ARTIFACT_SETTINGS };
  // The same store with shred keys (a KEK file and a platform key directory, as KILN_SECRETS_KEK_FILE
  // and KILN_SHRED_KEY_DIR give the web app): uploads from an agent that offers sealing are sealed.
  const kekFile = path.join(root, "kek");
  await writeFile(kekFile, generateKekText(), { mode: 0o600 });
  const sealedStore: ArtifactStore = {
    ...store,
    shred: { db, keks: new KekSource(kekFile), platformKeys: new PlatformKeyStore(path.join(root, "shred-keys")) },
  };
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
  const rows: { put: number; get: number; kiln: Partial<Record<Variant, KilnTimes>> }[] = [];
  const variants: Variant[] = SHRED ? ["clear", "sealed"] : ["clear"];
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
    const tickets = new Map<string, JobTicket>();
    const claimsFor = (jobId: string): JobClaims => {
      const t = tickets.get(jobId);
      if (!t) throw new Error("unknown job");
      return { attemptId: t.attemptId, jobId: t.jobId, epoch: t.epoch };
    };
    const finalizeMs: number[] = [];
    // Times the finaliser call (CompleteMultipartUpload + verification + seal) inside upload+seal.
    const clientFor = (v: Variant) => {
      const inner = inProcessFetch(db, v === "sealed" ? sealedStore : store, claimsFor);
      return new ControlClient("http://in-process", "unused", async (input, init) => {
        const t0 = performance.now();
        const r = await inner(input, init);
        if (String(input).endsWith("/complete")) finalizeMs.push(performance.now() - t0);
        return r;
      });
    };
    const clients = { clear: clientFor("clear"), sealed: clientFor("sealed") };
    // Claims `n` ready jobs and files them by run: every variant has its own run, and the session
    // claims whichever ready job comes first.
    const claimAll = async (n: number): Promise<Map<string, JobTicket>> => {
      const byRun = new Map<string, JobTicket>();
      for (let i = 0; i < n; i++) {
        const c = await claimJob(db, CFG, { sessionId: session.sessionId, claimRequestId: randomUUID() });
        if (c.kind !== "claimed") throw new Error(`claim: ${c.kind}`);
        tickets.set(c.ticket.jobId, c.ticket);
        byRun.set(c.ticket.runId, c.ticket);
      }
      return byRun;
    };
    const signal = new AbortController().signal;

    for (let round = 1; round <= ROUNDS; round++) {
      const work = path.join(root, `round-${round}`);
      const order = round % 2 === 1 ? variants : [...variants].reverse();
      const runOf = new Map<Variant, string>();
      for (const v of order) {
        const runId = await withTx(db, "bench-run", async (tx) => {
          const r = await tx.$queryRaw<{ id: string }[]>`
            INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, commit_sha, workflow_path, workflow_hash, definition, inputs)
            VALUES (${org.id}::uuid, ${repo.id}::uuid, 'running', 'trusted', 'manual', ${"b".repeat(40)}, '.kiln/workflow.yaml', 'h', ${JSON.stringify(parsed.definition)}::jsonb, '{}'::jsonb) RETURNING id`;
          await createJobs(tx, { id: r[0]!.id, orgId: org.id }, parsed.definition, "bench");
          return r[0]!.id;
        });
        runOf.set(v, runId);
      }
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

      const producers = await claimAll(order.length);
      const times: Partial<Record<Variant, KilnTimes>> = {};
      const generations = new Map<Variant, { id: string; sha256: string; ws: string }>();
      for (const v of order) {
        const client = clients[v];
        const producer = producers.get(runOf.get(v) ?? "");
        if (!producer || producer.job.name !== "compile") throw new Error(`no compile job claimed for ${v}`);
        const ws = path.join(work, v, "workspace");
        await mkdir(ws, { recursive: true });
        await pipeline(createReadStream(source), createWriteStream(path.join(ws, "app.bin")));
        const spool = path.join(work, v, "spool");
        await mkdir(spool);
        const [freeze, frozen] = await timed(() => freezeArtifact(ws, spool, { name: "app", path: "app.bin" }));
        if (!frozen.ok) throw new Error(frozen.message);
        const [upload, up] = await timed(() =>
          uploadArtifact(frozen.artifact, { client, ticket: producer, log, signal }),
        );
        if (!up.ok) throw new Error(JSON.stringify(up.failure));
        const g = await db.$queryRaw<
          {
            v: string | null;
            object_key: string;
            shred_key_id: string | null;
            stored: bigint | null;
            part_size: bigint;
          }[]
        >`
          SELECT e.data->>'verified_by' AS v, g.object_key, g.shred_key_id::text, g.stored_size_bytes AS stored, g.part_size
          FROM artifact_generation g
          JOIN transition_event e ON e.entity = 'artifact' AND e.to_state = 'sealed' AND e.data->>'generation_id' = g.id::text
          WHERE g.id = ${up.generationId}::uuid`;
        const row = g[0];
        if (!row) throw new Error("the upload left no sealed generation");
        // The sealed variant must really have stored the sealed framing (header, chunks and tags).
        const head = await s3.send(new HeadObjectCommand({ Bucket: "kiln", Key: row.object_key }));
        const want = v === "sealed" ? sealedSize(SIZE, SHRED_DEFAULT_CHUNK_BYTES) : SIZE;
        if ((v === "sealed") !== (row.shred_key_id !== null) || head.ContentLength !== want)
          throw new Error(`${v}: the store holds ${head.ContentLength} bytes, expected ${want}`);
        times[v] = {
          freeze,
          upload,
          finalize: finalizeMs.at(-1) ?? 0,
          assembly: assemblyMs.at(-1) ?? 0,
          download: 0,
          verifiedBy: row.v ?? "?",
          partSize: Number(row.part_size),
        };
        generations.set(v, { id: up.generationId, sha256: frozen.artifact.sha256, ws });
        progress(
          `round ${round} ${v}: freeze ${(freeze / 1000).toFixed(2)} s, upload+seal ${(upload / 1000).toFixed(2)} s (verified by ${row.v}; ${Number(row.part_size) / 1048576} MiB parts)`,
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
      }

      // Plain SDK GetObject of the same bytes into a file.
      const [get] = await timed(async () => {
        const r = await s3.send(new GetObjectCommand({ Bucket: "kiln", Key: `baseline/${round}` }));
        await pipeline(r.Body as NodeJS.ReadableStream, createWriteStream(path.join(work, "baseline.bin")));
      });
      await rm(path.join(work, "baseline.bin"));
      progress(`round ${round}: GetObject ${(get / 1000).toFixed(2)} s`);
      const consumers = await claimAll(order.length);
      for (const v of order) {
        const consumer = consumers.get(runOf.get(v) ?? "");
        const gen = generations.get(v);
        const t = times[v];
        if (!consumer || consumer.job.name !== "test" || !gen || !t) throw new Error(`no test job claimed for ${v}`);
        const spool2 = path.join(work, v, "spool2");
        await mkdir(spool2);
        // restoreArtifact checks the plaintext's size and SHA-256 against the binding before placing.
        const [download, down] = await timed(() =>
          restoreArtifact(
            { fromJob: "compile", name: "app", path: "inputs/app.bin" },
            { client: clients[v], ticket: consumer, log, signal, workspaceDir: gen.ws, spoolDir: spool2 },
          ),
        );
        if (!down.ok) throw new Error(JSON.stringify(down));
        if (down.sizeBytes !== SIZE || gen.id !== down.generationId) throw new Error("restored the wrong generation");
        t.download = download;
        progress(`round ${round} ${v}: download+verify ${(download / 1000).toFixed(2)} s`);
      }
      rows.push({ put, get, kiln: times });
      await rm(work, { recursive: true, force: true });
      // Every round starts from the same store: earlier rounds' objects (2 GiB each) otherwise filled
      // the page cache round after round, and later rounds measured memory pressure, not transfers.
      const keys = await db.$queryRaw<{ object_key: string }[]>`
        SELECT object_key FROM artifact_generation WHERE id = ANY(${[...generations.values()].map((g) => g.id)}::uuid[])`;
      for (const k of [`baseline/${round}`, ...keys.map((r) => r.object_key)])
        await s3.send(new DeleteObjectCommand({ Bucket: "kiln", Key: k }));
    }
  } finally {
    s3.destroy();
    await db.$disconnect();
    await s3h.stop();
    await pg.stop();
    await rm(root, { recursive: true, force: true });
  }
  report(rows, variants, stock);
}

function report(
  rows: { put: number; get: number; kiln: Partial<Record<Variant, KilnTimes>> }[],
  variants: Variant[],
  stock: boolean,
): void {
  const mibs = (msv: number) => (MIB / (msv / 1000)).toFixed(0);
  const s = (msv: number) => (msv / 1000).toFixed(2);
  const put = median(rows.map((r) => r.put));
  const get = median(rows.map((r) => r.get));
  console.log(
    `\nload average at the end: ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(" ")}`,
  );
  const kv = (v: Variant) => rows.map((r) => r.kiln[v] as KilnTimes);
  const sealedAfter = variants.map((v) => `${v}: ${[...new Set(kv(v).map((k) => k.verifiedBy))].join(", ")}`);
  const parts = variants.map((v) => `${v} ${(kv(v)[0]?.partSize ?? 0) / 1048576} MiB`);
  console.log(
    `Artifacts${SHRED ? " clear and sealed (parts sealed as PUT, opened while downloading)" : ""}, ${MIB} MiB, median of ${rows.length} round(s), ${stock ? "stock " : ""}s3rver (own process) on local disk, ${os.cpus().length} vCPU; parts: ${parts.join(", ")}; sealed after: ${sealedAfter.join("; ")}`,
  );
  console.log(`| path | seconds | MiB/s | ratio to plain SDK |`);
  console.log(`| --- | ---: | ---: | ---: |`);
  const line = (label: string, msv: number, base: number | null) =>
    console.log(`| ${label} | ${s(msv)} | ${mibs(msv)} | ${base === null ? "-" : (base / msv).toFixed(2)} |`);
  line("plain PutObject", put, put);
  for (const v of variants) {
    const m = (f: (k: KilnTimes) => number) => median(kv(v).map(f));
    line(
      `Kiln upload+seal, ${v} (parts, records, complete, verify, seal)`,
      m((k) => k.upload),
      put,
    );
    line(
      `- of which parts (${v === "sealed" ? "read plaintext, seal, " : ""}PUT + SHA-256 + MD5 per part + part records)`,
      m((k) => k.upload - k.finalize),
      put,
    );
    line(
      "- of which the store's CompleteMultipartUpload",
      m((k) => k.assembly),
      null,
    );
    line(
      "- of which Kiln's verification (ETag vs part MD5s, else read-back) + seal",
      m((k) => k.finalize - k.assembly),
      null,
    );
    line(
      `Kiln upload+seal, ${v}, without the store's assembly time`,
      m((k) => k.upload - k.assembly),
      put,
    );
    line(
      `Kiln freeze (spool copy + SHA-256), before upload, ${v}`,
      m((k) => k.freeze),
      null,
    );
    line(
      `Kiln freeze+upload+seal, ${v}`,
      m((k) => k.freeze + k.upload),
      put,
    );
  }
  line("plain GetObject", get, get);
  for (const v of variants)
    line(
      `Kiln download+verify, ${v} (grant, GET${v === "sealed" ? " + open every chunk" : ""} + SHA-256, place)`,
      median(kv(v).map((k) => k.download)),
      get,
    );
  for (const v of variants)
    console.log(
      `per round, ${v}: upload+seal ${rows.map((r) => (r.put / (r.kiln[v]?.upload ?? Number.NaN)).toFixed(2)).join(", ")}; download+verify ${rows.map((r) => (r.get / (r.kiln[v]?.download ?? Number.NaN)).toFixed(2)).join(", ")}`,
    );
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
