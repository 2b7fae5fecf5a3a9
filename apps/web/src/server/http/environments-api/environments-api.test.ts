import { createDb, type Db } from "@kiln/db";
import { addMember, addRepo, createApiToken, createMemberApiToken, createOrg } from "@kiln/engine";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { environment, environmentList, policyVersion, promotableArtifactList } from "../schemas/environments.ts";

// The /v1 environments routes called as Next calls them (the exported handlers, a real Request),
// on a cloned real database: answers parse against their strict schemas, and the hostile side
// (another org's token, a member, an org token approving) is refused with the mapped codes.
const dbName = uniqueDatabaseName("web_env_api");
let db: Db;
const tokens: Record<string, string> = {};
let repoId = "";
type Handler = (req: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
let routes: {
  envs: { GET: Handler; POST: Handler };
  policy: { GET: Handler; PUT: Handler };
  promotion: { GET: Handler };
  approvals: { POST: Handler };
  promotions: { POST: Handler };
  artifacts: { GET: Handler };
};

beforeAll(async () => {
  const url = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), dbName);
  // The routes' services() read the web env once, at first use: this test's database.
  process.env.DATABASE_URL = url;
  db = createDb({ url, max: 4 });
  for (const slug of ["acme", "globex"]) await createOrg(db, slug);
  await addMember(db, { orgSlug: "acme", login: "ada", role: "admin" });
  await addMember(db, { orgSlug: "acme", login: "max", role: "member" });
  tokens.ada = (await createMemberApiToken(db, { orgSlug: "acme", login: "ada" })).token;
  tokens.max = (await createMemberApiToken(db, { orgSlug: "acme", login: "max" })).token;
  tokens.acmeOrg = (await createApiToken(db, { orgSlug: "acme", role: "admin" })).token;
  tokens.globex = (await createApiToken(db, { orgSlug: "globex", role: "admin" })).token;
  repoId = (
    await addRepo(
      db,
      {
        orgSlug: "acme",
        name: "acme/app",
        cloneUrl: "file:///nonexistent",
        webhookSecret: "s3cret-value",
        workflowPath: ".kiln/w.yaml",
      },
      { localReposRoot: "/" },
    )
  ).id;
  routes = {
    envs: (await import("@/app/v1/repos/[repoId]/environments/route.ts")) as never,
    policy: (await import("@/app/v1/environments/[envId]/policy/route.ts")) as never,
    promotion: (await import("@/app/v1/promotions/[promotionId]/route.ts")) as never,
    approvals: (await import("@/app/v1/promotions/[promotionId]/approvals/route.ts")) as never,
    promotions: (await import("@/app/v1/environments/[envId]/promotions/route.ts")) as never,
    artifacts: (await import("@/app/v1/environments/[envId]/artifacts/route.ts")) as never,
  };
});

afterAll(async () => {
  await db?.$disconnect();
  await dropDatabase(inject("pgServerUrl"), dbName);
});

function call(
  h: Handler,
  who: string,
  params: Record<string, string>,
  method = "GET",
  body?: unknown,
): Promise<Response> {
  return h(
    new Request("http://kiln.test/v1/x", {
      method,
      headers: { authorization: `Bearer ${tokens[who] ?? "none"}`, "content-type": "application/json" },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
    { params: Promise.resolve(params) },
  );
}

const errorCode = async (r: Response) => ((await r.json()) as { error: { code: string } }).error.code;

describe("/v1 environments", () => {
  it("an admin's personal token creates environments; answers match the strict schemas", async () => {
    const created = await call(routes.envs.POST, "ada", { repoId }, "POST", { name: "staging" });
    expect(created.status).toBe(201);
    const staging = environment.strict().parse(await created.json());
    const prod = await call(routes.envs.POST, "ada", { repoId }, "POST", { name: "production", after: "staging" });
    expect(environment.parse(await prod.json())).toMatchObject({ production: true, after: "staging", pointer: null });
    const list = environmentList.parse(await (await call(routes.envs.GET, "max", { repoId })).json());
    expect(list.environments.map((e) => e.name)).toEqual(["staging", "production"]);
    const pol = policyVersion.parse(await (await call(routes.policy.GET, "max", { envId: staging.id })).json());
    expect(pol).toMatchObject({ version: 1, policy: { fail_mode: "closed" } });
    const put = await call(routes.policy.PUT, "ada", { envId: staging.id }, "PUT", {
      policy: { gates: { provenance: { source_refs: ["main"] } } },
      comment: "tighten",
    });
    expect(policyVersion.parse(await put.json())).toMatchObject({ version: 2, comment: "tighten" });
    // The promotion choices (issue 29): nothing built yet; real attested ones are the engine test's.
    const choices = await call(routes.artifacts.GET, "max", { envId: staging.id });
    expect(promotableArtifactList.strict().parse(await choices.json())).toEqual({ artifacts: [] });
  });

  it("refuses the hostile side: another org (404), a member setting policy (403), an org token approving (403)", async () => {
    const list = environmentList.parse(await (await call(routes.envs.GET, "ada", { repoId })).json());
    const env = list.environments[0];
    if (!env) throw new Error("no environment");
    const foreign = await call(routes.envs.GET, "globex", { repoId });
    expect([foreign.status, await errorCode(foreign)]).toEqual([404, "REPO.NOT_FOUND"]);
    const foreignPolicy = await call(routes.policy.GET, "globex", { envId: env.id });
    expect([foreignPolicy.status, await errorCode(foreignPolicy)]).toEqual([404, "ENV.NOT_FOUND"]);
    const foreignChoices = await call(routes.artifacts.GET, "globex", { envId: env.id });
    expect([foreignChoices.status, await errorCode(foreignChoices)]).toEqual([404, "ENV.NOT_FOUND"]);
    const badLimit = await routes.artifacts.GET(
      new Request(`http://kiln.test/v1/environments/${env.id}/artifacts?limit=100000`, {
        headers: { authorization: `Bearer ${tokens.ada}` },
      }),
      { params: Promise.resolve({ envId: env.id }) },
    );
    expect([badLimit.status, await errorCode(badLimit)]).toEqual([400, "REQUEST.INVALID"]);
    const foreignPut = await call(routes.policy.PUT, "globex", { envId: env.id }, "PUT", { policy: { gates: {} } });
    expect(foreignPut.status).toBe(404);
    const member = await call(routes.policy.PUT, "max", { envId: env.id }, "PUT", { policy: { gates: {} } });
    expect([member.status, await errorCode(member)]).toEqual([403, "AUTH.FORBIDDEN"]);
    const memberCreate = await call(routes.envs.POST, "max", { repoId }, "POST", { name: "qa" });
    expect(memberCreate.status).toBe(403);
    const missing = await call(routes.promotion.GET, "ada", { promotionId: "00000000-0000-4000-8000-000000000000" });
    expect([missing.status, await errorCode(missing)]).toEqual([404, "PROMOTION.NOT_FOUND"]);
    const notUuid = await call(routes.promotion.GET, "ada", { promotionId: "nope" });
    expect([notUuid.status, await errorCode(notUuid)]).toEqual([404, "PROMOTION.NOT_FOUND"]);
    const approve = await call(
      routes.approvals.POST,
      "acmeOrg",
      { promotionId: "00000000-0000-4000-8000-000000000000" },
      "POST",
      {
        decision: "approve",
      },
    );
    expect([approve.status, await errorCode(approve)]).toEqual([403, "APPROVAL.MEMBER_REQUIRED"]);
    const badArtifact = await call(routes.promotions.POST, "max", { envId: env.id }, "POST", {
      artifact_id: "00000000-0000-4000-8000-000000000000",
      reason: "x",
    });
    expect([badArtifact.status, await errorCode(badArtifact)]).toEqual([404, "PROMOTION.ARTIFACT_NOT_FOUND"]);
    const badBody = await call(routes.promotions.POST, "max", { envId: env.id }, "POST", { reason: "x" });
    expect(badBody.status).toBe(400);
  });
});
