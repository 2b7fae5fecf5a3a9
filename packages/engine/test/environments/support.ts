// Environments test support: real attested artifacts (a claimed job publishes to the S3 server,
// completes, the attestor signs and logs its provenance), members as actors, and the decision
// service's deps.
import type { Db } from "@kiln/db";
import { attestJob } from "../../src/attestation/attest-job.ts";
import { completeAttempt } from "../../src/attempts/complete-attempt.ts";
import type { ArtifactStore } from "../../src/artifacts/index.ts";
import { builderPrefixFor, PolicyCache, type EnvActor, type EnvDeps } from "../../src/environments/index.ts";
import { addMember } from "../../src/tenants/index.ts";
import { claim, claimsOf, publish } from "../artifacts/support.ts";
import { def, newSession, seedFrozenRun, TEST_CFG, type Tenant } from "../support.ts";
import { attestorDeps } from "../attestation/support.ts";
import type { AttestationSigner } from "../../src/attestation/signer.ts";
import type pg from "pg";

const BUILD_AND_TEST = `version: 1
jobs:
  - name: build
    steps: [make]
    artifacts:
      publish:
        - name: app
          path: app.bin
  - name: test
    needs: [build]
    steps: [make test]
`;

export function envDeps(gateTimeoutMs = 2_000): EnvDeps {
  // attestorDeps signs as https://kiln.test.
  return { builderPrefix: builderPrefixFor("https://kiln.test"), gateTimeoutMs, policies: new PolicyCache() };
}

export interface Infra {
  db: () => Db;
  pool: () => pg.Pool;
  store: () => ArtifactStore;
  signer: () => AttestationSigner;
}

/**
 * A run of `tenant` whose build job published `app` (distinct bytes per call); `test` succeeds
 * unless told to fail; attested unless `attest: false`. The run was triggered by `author` (by
 * default a fresh member of the org; null: nobody Kiln can name as a member, e.g. an org token).
 */
export async function producedArtifact(
  x: Infra,
  tenant: Tenant,
  opts: { attest?: boolean; testFails?: boolean; ref?: string; author?: EnvActor | null } = {},
): Promise<{ artifactId: string; runId: string; jobId: string }> {
  const db = x.db();
  const s = await newSession(db, tenant);
  const runId = await seedFrozenRun(db, tenant, def(BUILD_AND_TEST), "trusted", opts.ref ?? "refs/heads/main");
  const author = opts.author === undefined ? await member(db, tenant, "member") : opts.author;
  await db.$executeRaw`
    UPDATE workflow_run SET actor = ${author?.actor ?? "token:ci"}, actor_user_id = ${author?.userId ?? null}::uuid
    WHERE id = ${runId}::uuid`;
  const build = await claim(db, s);
  if (!build) throw new Error("nothing to claim");
  const data = Buffer.from(`app ${runId} ${Math.random()}`);
  const artifactId = await publish(db, x.store(), build, "app", data);
  await completeAttempt(db, TEST_CFG, { ...claimsOf(build), outcome: "success", sandboxDestroyed: true });
  const test = await claim(db, s);
  if (!test) throw new Error("test job not ready");
  await completeAttempt(db, TEST_CFG, {
    ...claimsOf(test),
    outcome: opts.testFails ? "user_failure" : "success",
    sandboxDestroyed: true,
  });
  if (opts.attest ?? true) {
    const r = await attestJob(attestorDeps(db, x.pool(), x.store(), x.signer()), {
      jobId: build.jobId,
      epoch: build.epoch,
    });
    if (r.kind !== "attested") throw new Error(`attestation: ${r.kind}`);
  }
  return { artifactId, runId, jobId: build.jobId };
}

let n = 0;
/** A new member of the tenant's org with `role`, as the actor the dashboard would make. */
export async function member(
  db: Db,
  tenant: Tenant,
  role: "admin" | "member" | "auditor",
  login?: string,
): Promise<EnvActor> {
  const name = login ?? `${role}-${++n}-${Math.random().toString(36).slice(2, 6)}`;
  const m = await addMember(db, { orgSlug: tenant.slug, login: name, role });
  return { orgId: tenant.orgId, role, userId: m.userId, login: name, actor: `web:${name}` };
}
