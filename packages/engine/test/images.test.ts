// Tag -> digest pinning at freeze time, against Debian's real docker-registry (basic auth).
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { agentProtocol, type WorkflowDefinition } from "@kiln/domain";
import {
  buildImage,
  OCI_INDEX,
  OCI_MANIFEST,
  pushImage,
  RegistryClient,
  registryEndpoint,
  writeTar,
  type RegistryConfig,
  type SourcePolicy,
} from "@kiln/oci";
import {
  freePort,
  publishBaseImage,
  startGitServer,
  startRegistry,
  type PublishedImage,
  type RegistryHandle,
  type TestGitServer,
} from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { claimJob } from "../src/dispatch/claim-job.ts";
import { pinImages, resolveImage } from "../src/images/index.ts";
import { admitManualRun, manualTriggerBody } from "../src/runs/admit-manual.ts";
import { freezeRun } from "../src/runs/freeze-run.ts";
import { def as parseDef, newSession, runStatus, seedFrozenRun, seedTenant, TEST_CFG, useTestDb } from "./support.ts";

const t = useTestDb();
const CREDS = { username: "kiln", password: "registry-pass" };
let base: string;
let registry: RegistryHandle;
let git: TestGitServer;
let config: RegistryConfig;
let published: PublishedImage;
/** Nothing listens there: connection refused (fetch forbids "bad ports" such as 9 outright). */
let dead: string;
/** The test git server is on loopback: local repositories are enabled, as `npm run up` does. */
let source: SourcePolicy;

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-engine-images-"));
  registry = await startRegistry({ dataDir: path.join(base, "registry"), basicAuth: CREDS });
  git = await startGitServer({ rootDir: path.join(base, "git") });
  dead = `127.0.0.1:${await freePort()}`;
  config = { [registry.host]: CREDS, [dead]: {} };
  published = await publishBaseImage({ registry: registry.host, config });
  source = { localReposRoot: base };
});
afterAll(async () => {
  await registry?.stop();
  await git?.stop();
  await rm(base, { recursive: true, force: true });
});

describe("resolveImage", () => {
  it("resolves a tag through the index to the linux/amd64 manifest digest; a pinned ref is used as is", async () => {
    expect(await resolveImage(config, published.ref)).toEqual({
      ok: true,
      ref: published.ref,
      digest: published.manifestDigest,
      pinned: `${registry.host}/kiln/base@${published.manifestDigest}`,
    });
    const pinned = `${registry.host}/kiln/nowhere@${published.manifestDigest}`;
    // No registry call: even an unreachable registry resolves a pinned ref...
    expect(await resolveImage(config, `${dead}/kiln/x@${published.manifestDigest}`)).toMatchObject({
      ok: true,
      digest: published.manifestDigest,
    });
    // ...but only on a configured registry: the agents would refuse it after dispatch otherwise.
    expect(await resolveImage({}, `${dead}/kiln/x@${published.manifestDigest}`)).toMatchObject({
      ok: false,
      kind: "policy",
      cause: "image.not_allowed",
      message: expect.stringContaining("KILN_REGISTRIES"),
    });
    expect(await resolveImage(config, pinned)).toMatchObject({ ok: true, digest: published.manifestDigest });
  });

  it("a tag naming a plain manifest resolves to it; an index without linux/amd64 is refused", async () => {
    const client = new RegistryClient(registryEndpoint(config, registry.host));
    const img = buildImage({ layers: [writeTar([{ path: "x", type: "file", data: "plain" }])] });
    await pushImage(client, "kiln/plain", "index", img);
    await client.putManifest("kiln/plain", "manifest-only", OCI_MANIFEST, img.manifest);
    expect(await resolveImage(config, `${registry.host}/kiln/plain:manifest-only`)).toMatchObject({
      ok: true,
      digest: img.manifestDigest,
    });
    const armOnly = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_INDEX,
        manifests: [
          {
            mediaType: OCI_MANIFEST,
            digest: img.manifestDigest,
            size: img.manifest.length,
            platform: { os: "linux", architecture: "arm64" },
          },
        ],
      }),
    );
    await client.putManifest("kiln/plain", "arm-only", OCI_INDEX, armOnly);
    expect(await resolveImage(config, `${registry.host}/kiln/plain:arm-only`)).toMatchObject({
      ok: false,
      kind: "invalid",
      cause: "image.no_platform",
      message: expect.stringContaining("arm64"),
    });
  });

  it("classifies a missing tag, a bad ref, missing credentials and an unreachable registry", async () => {
    expect(await resolveImage(config, `${registry.host}/kiln/base:nope`)).toMatchObject({
      ok: false,
      kind: "not_found",
      cause: "image.not_found",
      message: expect.stringContaining(`${registry.host}/kiln/base:nope`),
    });
    expect(await resolveImage(config, `${registry.host}/kiln/missing-repo:1`)).toMatchObject({
      ok: false,
      kind: "not_found",
    });
    expect(await resolveImage(config, "Bad Ref")).toMatchObject({
      ok: false,
      kind: "invalid",
      cause: "image.invalid_ref",
    });
    expect(await resolveImage({ [registry.host]: {} }, published.ref)).toMatchObject({
      ok: false,
      kind: "invalid",
      cause: "image.unauthorized",
    });
    expect(await resolveImage({}, published.ref)).toMatchObject({
      ok: false,
      kind: "policy",
      cause: "image.not_allowed",
    });
    expect(await resolveImage(config, `${dead}/kiln/base:1`)).toMatchObject({
      ok: false,
      kind: "unreachable",
      cause: "image.unreachable",
    });
  });
});

describe("freezing pins images", () => {
  async function pendingRun(workflow: string): Promise<{ runId: string; orgId: string }> {
    const tenant = await seedTenant(t.db());
    const repo = await git.createRepo(`${tenant.slug}.git`, { ".kiln/workflow.yaml": workflow });
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    const caller = { tokenId: tenant.tokenId, orgId: tenant.orgId, role: "member" as const, name: "t" };
    const body = manualTriggerBody.parse({ workflow_path: ".kiln/workflow.yaml", commit_sha: repo.headSha });
    const r = await admitManualRun(t.db(), {
      caller,
      repoId: tenant.repoId,
      idempotencyKey: randomUUID(),
      body,
      source: { gitCacheDir: path.join(base, "git-ref-check"), policy: source },
    });
    return { runId: r.runId, orgId: tenant.orgId };
  }
  const workflow = (ref: string) =>
    `version: 1\njobs:\n  - name: build\n    image: ${ref}\n    steps: [echo hi]\n  - name: plain\n    steps: [echo]\n`;
  const cacheDir = () => path.join(base, "git-cache");

  it("stores the digest beside the ref, and the ticket carries it", async () => {
    const { runId } = await pendingRun(workflow(published.ref));
    expect(
      await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source, finalTry: false, registries: config }),
    ).toBe("frozen");
    const rows = await t.db().$queryRaw<
      { definition: WorkflowDefinition }[]
    >`SELECT definition FROM workflow_run WHERE id = ${runId}::uuid`;
    const def = rows[0]!.definition;
    expect(def.jobs[0]!.image).toEqual({ ref: published.ref, digest: published.manifestDigest });
    expect(def.jobs[1]!.image).toBeNull();

    const tenant = await seedTenant(t.db());
    const session = await newSession(t.db(), tenant);
    await seedFrozenRun(t.db(), tenant, def);
    const claimed = await claimJob(t.db(), TEST_CFG, { sessionId: session, claimRequestId: randomUUID() });
    if (claimed.kind !== "claimed") throw new Error(`expected a claim, got ${claimed.kind}`);
    expect(claimed.ticket.job).toMatchObject({ image: published.ref, imageDigest: published.manifestDigest });
    expect(agentProtocol.jobTicket.parse(JSON.parse(JSON.stringify(claimed.ticket))).job.imageDigest).toBe(
      published.manifestDigest,
    );
  });

  it("a job without image: gets the pool's default base image, pinned", async () => {
    const { runId } = await pendingRun(workflow(published.ref));
    expect(
      await freezeRun(t.db(), {
        runId,
        gitCacheDir: cacheDir(),
        source,
        finalTry: false,
        registries: config,
        poolImages: { default: published.ref },
      }),
    ).toBe("frozen");
    const rows = await t.db().$queryRaw<
      { definition: WorkflowDefinition }[]
    >`SELECT definition FROM workflow_run WHERE id = ${runId}::uuid`;
    expect(rows[0]!.definition.jobs.map((j) => j.image)).toEqual([
      { ref: published.ref, digest: published.manifestDigest },
      { ref: published.ref, digest: published.manifestDigest },
    ]);
  });

  it("each job gets its own pool's default, `host` only where a pool declares it, or is refused (issue 30)", async () => {
    const three = parseDef(
      `version: 1\njobs:\n  - name: a\n    steps: [echo]\n  - name: b\n    runs_on: {pool: acme/gpu}\n    steps: [echo]\n` +
        `  - name: c\n    image: ${published.ref}\n    steps: [echo]\n`,
    );
    const pinned = { ref: published.ref, digest: published.manifestDigest };
    // The platform's default does not reach an org's pool: refused, named, never run on the host.
    expect(await pinImages(three, config, { default: published.ref })).toMatchObject({
      ok: false,
      kind: "policy",
      cause: "image.none_for_pool",
      message: expect.stringContaining("pool acme/gpu has no default image"),
    });
    const withHost = await pinImages(three, config, { default: published.ref, "acme/gpu": "host" });
    if (!withHost.ok) throw new Error(withHost.message);
    expect(withHost.definition.jobs.map((j) => j.image)).toEqual([pinned, { ref: "host" }, pinned]);
    const everywhere = await pinImages(three, config, { "*": "host" });
    if (!everywhere.ok) throw new Error(everywhere.message);
    expect(everywhere.definition.jobs.map((j) => j.image)).toEqual([{ ref: "host" }, { ref: "host" }, pinned]);
    // A job's own `image: host` is an image reference (docker.io/library/host here: not a registry
    // this installation uses), never the host's tools.
    const own = parseDef(`version: 1\njobs:\n  - name: a\n    image: host\n    steps: [echo]\n`);
    expect(await pinImages(own, config, { "*": "host" })).toMatchObject({ ok: false, cause: "image.not_allowed" });
  });

  it("an unknown tag fails the run as user_failure image.not_found naming the ref", async () => {
    const ref = `${registry.host}/kiln/base:does-not-exist`;
    const { runId } = await pendingRun(workflow(ref));
    expect(
      await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source, finalTry: false, registries: config }),
    ).toBe("invalid");
    expect(await runStatus(t.db(), runId)).toMatchObject({
      status: "completed",
      outcome: "user_failure",
      cause: "image.not_found",
    });
    const msg = await t.db().$queryRaw<
      { cause_message: string }[]
    >`SELECT cause_message FROM workflow_run WHERE id = ${runId}::uuid`;
    expect(msg[0]!.cause_message).toContain(ref);
  });

  it("an unreachable registry is retried, then a platform failure image.unreachable", async () => {
    const { runId } = await pendingRun(workflow(`${dead}/kiln/base:1`));
    expect(
      await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source, finalTry: false, registries: config }),
    ).toBe("retry_later");
    expect((await runStatus(t.db(), runId)).status).toBe("pending");
    expect(
      await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source, finalTry: true, registries: config }),
    ).toBe("gave_up");
    expect(await runStatus(t.db(), runId)).toMatchObject({ outcome: "platform_failure", cause: "image.unreachable" });
  });
});
