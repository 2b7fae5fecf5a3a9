import { DEFAULT_ENGINE_CONFIG } from "@kiln/engine";
import {
  counts,
  LOCAL_SOURCE,
  promote,
  seedBuild,
  seedEnvironment,
  setConfig,
  useGit,
  useS3,
  useTestDb,
} from "@kiln/engine/testing";
import { silentLogger } from "@kiln/logger";
import type { Job, PgBoss } from "pg-boss";
import { describe, expect, it } from "vitest";
import { environmentPointerMovedJob } from "./environment-pointer-moved.job.ts";
import type { WorkerDeps } from "./job-definition.ts";

// Run-it-twice (conventions rule 9) for the deployer, on real PostgreSQL, s3rver and git: the
// message env-core's movePointer queued starts one deploy run; a second and two concurrent further
// deliveries start nothing more and write nothing.
const t = useTestDb();
const s3 = useS3();
const git = useGit();

describe("environment-pointer-moved job", () => {
  it("starts one deploy run however often the same move is delivered", async () => {
    const b = await seedBuild(t.db(), s3.store(), git().server);
    const env = await seedEnvironment(t.db(), b.tenant, "staging");
    await setConfig(t.db(), env, b.tenant.orgId);
    await promote(t.db(), b, env);
    // The payload exactly as the outbox row holds it (what the relay hands to pg-boss).
    const rows = await t.db().$queryRaw<{ payload: unknown }[]>`
      SELECT payload FROM outbox WHERE topic = 'environment.pointer_moved' AND payload->>'environmentId' = ${env}`;
    expect(rows).toHaveLength(1);
    const data = environmentPointerMovedJob.payload.parse(rows[0]!.payload);
    const deps = {
      db: t.db(),
      boss: null as unknown as PgBoss,
      cfg: DEFAULT_ENGINE_CONFIG,
      gitCacheDir: git().cacheDir,
      source: LOCAL_SOURCE,
      log: silentLogger,
      registries: {},
      poolImages: {},
      forge: { apiUrl: "http://127.0.0.1:1", publicUrl: null, secretsKey: null, app: null, requestTimeoutMs: 1000 },
      // This job needs none of the shared runtimes.
      runtime: {
        shred: null,
        attestor: () => Promise.reject(new Error("no attestor in this test")),
        tlog: () => {
          throw new Error("no tlog in this test");
        },
      },
    } satisfies WorkerDeps;
    const job = {} as Job<unknown>;
    await environmentPointerMovedJob.handle(deps, data, job);
    const once = await counts(t.db(), b.tenant.orgId);
    await environmentPointerMovedJob.handle(deps, data, job);
    await Promise.all([
      environmentPointerMovedJob.handle(deps, data, job),
      environmentPointerMovedJob.handle(deps, data, job),
    ]);
    expect(await counts(t.db(), b.tenant.orgId)).toEqual(once);
    const deployments = await t.db().$queryRaw<{ state: string; trigger: string }[]>`
      SELECT d.state, r.trigger FROM deployment d JOIN workflow_run r ON r.id = d.run_id WHERE d.environment_id = ${env}::uuid`;
    expect(deployments).toEqual([{ state: "running", trigger: "deploy" }]);
    expect(() => environmentPointerMovedJob.payload.parse({ ...data, pointerSeq: "1; drop" })).toThrow();
  });
});
