import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { PutObjectCommand } from "@aws-sdk/client-s3";
import { bundleFromJSON } from "@sigstore/bundle";
import { PublicKeyDetails } from "@sigstore/protobuf-specs";
import { toSignedEntity, toTrustMaterial, Verifier } from "@sigstore/verify";
import { addMember, createObjectStore } from "@kiln/engine";
import { s3Env, startS3, type S3Handle } from "@kiln/testkit";
import { createPublicKey } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { screenshot, signIn, TestBrowser } from "./support/browser.ts";
import { Platform, type Proc } from "./support/platform.ts";

// Issue 17 end to end: real web, workers (attestor, verifier, checkpoint signer), host agents and
// s3rver. The seed's two-job pipeline with a fenced first uploader; the attestation of the winner
// against the bytes in object storage; an auditor's offline verification; a tampered object
// quarantined; the key never reaching an agent or a sandbox; the auditor views in Chromium.
let s3: S3Handle;
let s3Dir = "";
let work = "";
let p: Platform;

beforeAll(async () => {
  s3Dir = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-prov-s3-"));
  work = await mkdtemp(path.join(os.tmpdir(), "kiln-e2e-prov-"));
  s3 = await startS3({ dataDir: s3Dir, bucket: "kiln" });
  p = new Platform({
    KILN_LEASE_TTL_MS: "6000",
    KILN_HEARTBEAT_MS: "500",
    KILN_RETRY_BUDGET: "4",
    ...s3Env(s3),
    KILN_ARTIFACT_PART_MIB: "5",
    KILN_DEV_LOGIN: "1",
    AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
  });
  await p.start();
}, 180_000);
afterAll(async () => {
  await p?.stop();
  await s3?.stop();
  await rm(s3Dir, { recursive: true, force: true });
  await rm(work, { recursive: true, force: true });
});

const JAR_BYTES = 15 * 1024 * 1024; // 3 parts of 5 MiB
const PIPELINE = `version: 1
jobs:
  - name: compile
    steps: ["mkdir -p target && head -c ${JAR_BYTES} /dev/urandom > target/app.jar"]
    artifacts:
      publish:
        - {name: app, path: target/app.jar}
  - name: test
    steps: ["sha256sum inputs/app.jar > digest.txt"]
    artifacts:
      restore:
        - {from_job: compile, name: app, path: inputs/app.jar}
      publish:
        - {name: digest, path: digest.txt}
`;

async function trigger(t: { repoId: string; token: string; git: { headSha: string } }, key: string): Promise<string> {
  const r = await p.api(
    "POST",
    `/v1/repos/${t.repoId}/workflow-runs`,
    t.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: t.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  return r.json.run_id as string;
}

async function waitUntil(pred: () => Promise<boolean>, timeoutMs: number, pollMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await pred()) return;
    await new Promise((r) => setTimeout(r, pollMs));
  }
  throw new Error(`condition not met in ${timeoutMs} ms\n${p.logs()}`);
}

async function bytesOf(url: string): Promise<Buffer> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");

function kiln(args: string[]): Promise<{ code: number; stdout: string }> {
  const { DATABASE_URL: _d, ...env } = process.env;
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", ...args],
      { cwd: path.resolve(import.meta.dirname, ".."), env },
      (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout }),
    ),
  );
}

let shared: {
  org: string;
  runId: string;
  compileJobId: string;
  artifactId: string;
  attestationId: string;
  quarantinedRun: string;
} | null = null;

describe("provenance", () => {
  it("the winner of a fenced upload is attested against the stored bytes; the stale attempt never is", async () => {
    const t = await p.seedTenant("prov-headline", { ".kiln/workflow.yaml": PIPELINE }, { member: "audra" });
    await addMember(p.db, { orgSlug: "prov-headline", login: "aud", role: "auditor", forgeId: 8_200_001 });
    const a: Proc = await p.startAgent("agent-a", t.agentToken);
    const runId = await trigger(t, "prov-1");
    await waitUntil(async () => {
      const r = await p.db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM artifact_part x JOIN artifact_generation g ON g.id = x.generation_id WHERE g.run_id = ${runId}::uuid AND g.epoch = 1`;
      return (r[0]?.n ?? 0n) > 0n;
    }, 90_000);
    a.child.kill("SIGSTOP");
    await p.startAgent("agent-b", t.agentToken);
    const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 300_000);
    a.child.kill("SIGCONT");
    expect(run.outcome).toBe("success");
    const compile = run.jobs[0];
    const winner = compile.attempts.find((x: any) => x.outcome === "success");
    expect(winner.epoch).toBeGreaterThanOrEqual(2);

    // The listing names each artifact and its attestation state; it reaches verified on its own.
    let art: any = null;
    await waitUntil(
      async () => {
        const l = await p.api("GET", `/v1/jobs/${compile.id}/artifacts`, t.token);
        art = l.json.artifacts?.[0];
        return art?.attestation_state === "verified";
      },
      60_000,
      200,
    );
    expect(art).toMatchObject({ name: "app", attempt_epoch: winner.epoch });
    expect(art.id).toMatch(/^[0-9a-f-]{36}$/);

    const b = await p.api("GET", `/v1/artifacts/${art.id}/attestation`, t.token);
    expect(b.status).toBe(200);
    expect(b.json.bundle.mediaType).toBe("application/vnd.dev.sigstore.bundle.v0.3+json");
    const st = JSON.parse(Buffer.from(b.json.bundle.dsseEnvelope.payload, "base64").toString("utf8"));
    // Subject digest = sha256 of the bytes object storage serves; invocation = this job, winning epoch.
    const redirect = await fetch(`${p.base}/v1/jobs/${compile.id}/artifacts/app`, {
      headers: { authorization: `Bearer ${t.token}` },
      redirect: "manual",
    });
    const jar = await bytesOf(redirect.headers.get("location")!);
    expect(st.subject).toEqual([{ name: "app", digest: { sha256: sha256(jar) } }]);
    expect(st.predicate.runDetails.metadata.invocationId).toMatch(
      new RegExp(`/runs/${runId}/jobs/${compile.id}/attempts/${winner.epoch}$`),
    );
    const deps = st.predicate.buildDefinition.resolvedDependencies as {
      uri?: string;
      digest?: Record<string, string>;
    }[];
    expect(deps[0]).toMatchObject({ digest: { gitCommit: t.git.headSha } });
    expect(deps[0]?.uri).toMatch(/^git\+/);

    // The consumer's statement lists the restored artifact with the producer's epoch.
    const testJob = run.jobs[1];
    await waitUntil(
      async () =>
        (await p.api("GET", `/v1/jobs/${testJob.id}/artifacts`, t.token)).json.artifacts?.[0]?.attestation_state ===
        "verified",
      60_000,
      200,
    );
    const digestArt = (await p.api("GET", `/v1/jobs/${testJob.id}/artifacts`, t.token)).json.artifacts[0];
    const tb = await p.api("GET", `/v1/artifacts/${digestArt.id}/attestation`, t.token);
    const tst = JSON.parse(Buffer.from(tb.json.bundle.dsseEnvelope.payload, "base64").toString("utf8"));
    expect(tst.predicate.buildDefinition.resolvedDependencies).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "artifact:compile/app",
          digest: { sha256: sha256(jar) },
          annotations: expect.objectContaining({ epoch: winner.epoch }),
        }),
      ]),
    );

    // The stale attempt's generation is in no statement, and stays out after it resumes.
    await new Promise((r) => setTimeout(r, 3_000));
    // (Only the compile job was fenced; its losing epochs are every epoch but the winner's.)
    const stale = await p.db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM attestation_subject s JOIN artifact_generation g ON g.id = s.generation_id
      WHERE g.job_id = ${compile.id}::uuid AND g.epoch <> ${winner.epoch}`;
    const staleGenerations = await p.db.$queryRaw<{ n: bigint }[]>`
      SELECT count(*) AS n FROM artifact_generation WHERE job_id = ${compile.id}::uuid AND epoch <> ${winner.epoch}`;
    expect(Number(staleGenerations[0]?.n)).toBeGreaterThan(0);
    expect(Number(stale[0]?.n)).toBe(0);
    const atts = await p.db.$queryRaw<
      { epoch: number }[]
    >`SELECT epoch FROM attestation WHERE job_id = ${compile.id}::uuid`;
    expect(atts).toEqual([{ epoch: winner.epoch }]);

    // @sigstore/verify accepts it with the published key (public endpoint) and thresholds of 0.
    const keys = await fetch(`${p.base}/v1/attestation/keys`).then(
      (r) => r.json() as Promise<{ keys: { key_id: string; spki_pem: string }[] }>,
    );
    const k = keys.keys.find((x) => x.key_id === b.json.bundle.verificationMaterial.publicKey.hint)!;
    const trust = toTrustMaterial(
      {
        mediaType: "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
        tlogs: [],
        certificateAuthorities: [],
        ctlogs: [],
        timestampAuthorities: [],
      },
      {
        [k.key_id]: {
          rawBytes: createPublicKey(k.spki_pem).export({ type: "spki", format: "der" }),
          keyDetails: PublicKeyDetails.PKIX_ECDSA_P256_SHA_256,
          validFor: { start: new Date(0) },
        },
      },
    );
    new Verifier(trust, { tlogThreshold: 0, ctlogThreshold: 0, timestampThreshold: 0 }).verify(
      toSignedEntity(bundleFromJSON(b.json.bundle)),
    );

    // An auditor verifies offline with what the public endpoints serve.
    const f = (n: string) => path.join(work, n);
    await writeFile(f("app.jar"), jar);
    await writeFile(f("bundle.json"), JSON.stringify(b.json));
    await writeFile(f("keys.json"), JSON.stringify(keys));
    await writeFile(f("log.key"), await fetch(`${p.base}/v1/tlog/verifier-key`).then((r) => r.text()));
    await writeFile(f("checkpoint"), await fetch(`${p.base}/tlog/checkpoint`).then((r) => r.text()));
    const v = await kiln([
      "verify",
      f("app.jar"),
      "--bundle",
      f("bundle.json"),
      "--keys",
      f("keys.json"),
      "--log-key",
      f("log.key"),
      "--source",
      t.git.cloneUrl,
      "--json",
    ]);
    expect(v.code, v.stdout).toBe(0);
    await writeFile(f("other.jar"), Buffer.concat([jar, Buffer.from("x")]));
    const bad = await kiln([
      "verify",
      f("other.jar"),
      "--bundle",
      f("bundle.json"),
      "--keys",
      f("keys.json"),
      "--log-key",
      f("log.key"),
      "--source",
      t.git.cloneUrl,
      "--json",
    ]);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout)).toMatchObject({ rule: "subject.digest" });

    const found = await p.api("GET", `/v1/attestations?subject_digest=sha256:${sha256(jar)}`, t.token);
    expect(found.json.attestations).toHaveLength(1);
    const other = await p.seedTenant("prov-other", { ".kiln/workflow.yaml": PIPELINE });
    expect(
      (await p.api("GET", `/v1/attestations?subject_digest=sha256:${sha256(jar)}`, other.token)).json.attestations,
    ).toEqual([]);
    expect((await p.api("GET", `/v1/artifacts/${art.id}/attestation`, other.token)).status).toBe(404);
    shared = {
      org: "prov-headline",
      runId,
      compileJobId: compile.id,
      artifactId: art.id,
      attestationId: found.json.attestations[0].id,
      quarantinedRun: "",
    };
  }, 480_000);

  it("a stored object altered after sealing is quarantined: downloads refused, never deleted", async () => {
    const t = await p.seedTenant("prov-tamper", {
      ".kiln/workflow.yaml": `version: 1\njobs:\n  - name: build\n    steps: ["sleep 2 && echo release > out.txt"]\n    artifacts: {publish: [{name: out, path: out.txt}]}\n`,
    });
    await p.startAgent("agent-t", t.agentToken);
    const runId = await trigger(t, "tamper-1");
    // Hold the workers (outbox relay, attestor, verifier) once the job runs, so the bytes can be
    // altered between sealing and the verifier's read, as a compromised store would.
    await p.waitForRun(runId, t.token, (x) => x.jobs[0]?.status === "running", 120_000);
    await p.signal("workers", "SIGSTOP");
    let jobId = "";
    try {
      const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 120_000);
      jobId = run.jobs[0].id;
      const key = await p.db.$queryRaw<{ object_key: string }[]>`
        SELECT g.object_key FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id WHERE b.job_id = ${jobId}::uuid`;
      const client = createObjectStore({
        endpoint: s3.endpoint,
        region: "us-east-1",
        accessKeyId: s3.accessKeyId,
        secretAccessKey: s3.secretAccessKey,
      });
      await client.send(new PutObjectCommand({ Bucket: "kiln", Key: key[0]!.object_key, Body: "tampered\n" }));
      client.destroy();
    } finally {
      await p.signal("workers", "SIGCONT");
    }
    await waitUntil(
      async () =>
        (await p.api("GET", `/v1/jobs/${jobId}/artifacts`, t.token)).json.artifacts?.[0]?.attestation_state ===
        "quarantined",
      60_000,
      200,
    );
    const dl = await p.api("GET", `/v1/jobs/${jobId}/artifacts/out`, t.token);
    expect(dl.status).toBe(403);
    expect(dl.json.error.code).toBe("ARTIFACT.QUARANTINED");
    const kept = await p.db.$queryRaw<{ state: string; object_deleted_at: Date | null }[]>`
      SELECT g.state, g.object_deleted_at FROM artifact_binding b JOIN artifact_generation g ON g.id = b.generation_id WHERE b.job_id = ${jobId}::uuid`;
    expect(kept).toEqual([{ state: "sealed", object_deleted_at: null }]);
    if (shared) shared.quarantinedRun = runId;
    await addMember(p.db, { orgSlug: "prov-tamper", login: "aud", role: "auditor", forgeId: 8_200_001 });
  }, 240_000);

  it("the signing key never reaches a host agent or a sandbox", async () => {
    const keyFile = p.attestationKeyFile;
    const pem = readFileSync(keyFile, "utf8");
    const body = pem
      .split("\n")
      .filter((l) => l && !l.startsWith("-----"))
      .join("");
    for (const name of ["agent-a", "agent-b", "agent-t", "web"]) {
      const pid = p.proc(name).child.pid!;
      const environ = readFileSync(`/proc/${pid}/environ`, "utf8");
      expect(environ, name).not.toContain("KILN_ATTESTATION_KEY_FILE");
      expect(environ, name).not.toContain(body.slice(0, 40));
    }
    // A hostile job looks for it: in its environment, at the workers' path, and across the host.
    const t = await p.seedTenant("prov-hostile", {
      ".kiln/workflow.yaml": `version: 1\njobs:\n  - name: steal\n    steps:\n      - "env | grep -c ATTESTATION || true"\n      - "cat ${keyFile} 2>&1 | head -c 200 || true"\n      - "grep -rl 'BEGIN PRIVATE KEY' ${path.dirname(path.dirname(keyFile))} 2>/dev/null | head -5 || true"\n`,
    });
    await p.startAgent("agent-h", t.agentToken);
    const runId = await trigger(t, "steal-1");
    const run = await p.waitForRun(runId, t.token, (x) => x.status === "completed", 120_000);
    const logs = await fetch(`${p.base}/v1/jobs/${run.jobs[0].id}/logs/raw?stream=stdout`, {
      headers: { authorization: `Bearer ${t.token}` },
    }).then((r) => r.text());
    expect(logs).not.toContain(body.slice(0, 40));
    expect(logs).not.toContain("BEGIN PRIVATE KEY");
  }, 240_000);

  it("auditor views in Chromium: run page state, search, record page, org home alert", async () => {
    expect(shared).not.toBeNull();
    const s = shared!;
    const browser = await TestBrowser.launch();
    try {
      const page = await browser.page();
      await signIn(page, p.base, "aud", `/orgs/${s.org}/runs/${s.runId}`);
      const artifacts = page.getByTestId("artifacts");
      await artifacts.locator("[data-testid='attestation-state'][data-state='verified']").first().waitFor();
      await page.getByRole("link", { name: "Provenance record of app" }).click();
      await page.waitForURL((u) => u.pathname === `/orgs/${s.org}/provenance/${s.attestationId}`);
      for (const id of ["check-signature", "check-leaf", "check-checkpoint", "check-inclusion", "check-bytes"])
        await page.locator(`[data-testid='${id}'][data-ok='true']`).waitFor();
      expect(await page.getByTestId("statement").textContent()).toContain("https://slsa.dev/provenance/v1");
      await page.getByTestId("run-history").getByText("attempt_finished").first().waitFor();
      const dl = page.waitForEvent("download");
      await page.getByTestId("download-bundle").click();
      const file = await (await dl).path();
      expect(JSON.parse(readFileSync(file, "utf8")).bundle.mediaType).toBe(
        "application/vnd.dev.sigstore.bundle.v0.3+json",
      );
      await screenshot(page, "provenance-record");

      // Search: empty, then a digest that matches nothing, then the run; keyboard only.
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Provenance" }).click();
      await page.getByText("Search provenance").waitFor();
      await page.getByLabel("Value").fill(`sha256:${"0".repeat(64)}`);
      await page.getByLabel("Value").press("Enter");
      await page.getByText("No attestations").waitFor();
      await page.getByLabel("Search by").selectOption("run");
      await page.getByLabel("Value").fill(s.runId);
      await page.getByLabel("Value").press("Enter");
      await page.getByTestId("provenance-results").getByRole("link").first().waitFor();
      expect(await page.getByTestId("provenance-results").getByRole("link").count()).toBe(2);
      await page.getByLabel("Value").fill("not-a-run");
      await page.getByLabel("Value").press("Enter");
      await page.getByText("a run id is a UUID").waitFor();

      // Another org's record is a not-found state, not a leak.
      await page.goto(`${p.base}/orgs/${s.org}/provenance/00000000-0000-4000-8000-000000000000`);
      await page.getByText("Provenance record not found").waitFor();

      // The tampered org's home raises the quarantine alert.
      await page.goto(`${p.base}/orgs/prov-tamper`);
      await page.getByTestId("quarantine-alert").getByText("quarantined").first().waitFor();
      await screenshot(page, "quarantine-alert");
    } finally {
      await browser.close();
    }
  }, 180_000);
});
