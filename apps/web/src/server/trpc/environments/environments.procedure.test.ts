import { createDb, type Db } from "@kiln/db";
import { addMember, addRepo, builderPrefixFor, createOrg, PolicyCache } from "@kiln/engine";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { appRouter, type AppRouter } from "../router.ts";

// The environments procedures through the real router and fetch handler, on a cloned real
// database: admins create and set policy, members read, other orgs get NOT_FOUND. The promotion
// flow itself (real attested artifacts) is packages/engine/test/environments.
const dbName = uniqueDatabaseName("web_envs");
let db: Db;
const envDeps = {
  builderPrefix: builderPrefixFor("https://kiln.test"),
  gateTimeoutMs: 1000,
  policies: new PolicyCache(),
};
const users: Record<string, { id: string; login: string }> = {};
let repoId = "";
const as = (login: string) =>
  createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: "http://kiln.test/api/trpc",
        fetch: (url, init) =>
          fetchRequestHandler({
            endpoint: "/api/trpc",
            req: new Request(url, init as RequestInit),
            router: appRouter,
            createContext: () => ({ db, user: users[login] ?? null, envDeps }),
          }),
      }),
    ],
  });

beforeAll(async () => {
  db = createDb({ url: await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), dbName), max: 4 });
  for (const slug of ["acme", "globex"]) await createOrg(db, slug);
  for (const [org, login, role] of [
    ["acme", "ada", "admin"],
    ["acme", "max", "member"],
    ["globex", "gus", "admin"],
  ] as const) {
    const { userId } = await addMember(db, { orgSlug: org, login, role });
    users[login] = { id: userId, login };
  }
  const repo = await addRepo(
    db,
    {
      orgSlug: "acme",
      name: "acme/app",
      cloneUrl: "file:///nonexistent",
      webhookSecret: "s3cret-value",
      workflowPath: ".kiln/workflow.yaml",
    },
    { localReposRoot: "/" },
  );
  repoId = repo.id;
});

afterAll(async () => {
  await db?.$disconnect();
  await dropDatabase(inject("pgServerUrl"), dbName);
});

async function codeOf(p: Promise<unknown>): Promise<{ code: string; domainCode: string | null }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TRPCClientError) return { code: e.data?.code, domainCode: e.data?.domainCode ?? null };
    throw e;
  }
  throw new Error("expected a refusal");
}

describe("environments procedures", () => {
  it("an admin creates staging and production, sets a policy version; members read; the inbox starts empty", async () => {
    const staging = await as("ada").environments.create.mutate({ org: "acme", repoId, name: "staging" });
    const prod = await as("ada").environments.create.mutate({
      org: "acme",
      repoId,
      name: "production",
      after: "staging",
    });
    expect(prod).toMatchObject({ production: true, after: "staging", policyVersion: 1, pointer: null });
    const v2 = await as("ada").environments.setPolicy.mutate({
      org: "acme",
      environmentId: staging.id,
      policy: {
        gates: {
          required_outcomes: {},
          provenance: {},
          freeze_windows: { windows: [{ time_zone: "Europe/Paris", start: "18:00", end: "08:00" }] },
        },
      },
    });
    expect(v2.version).toBe(2);
    const page = await as("max").environments.get.query({ org: "acme", environmentId: staging.id });
    expect(page).toMatchObject({ environment: { name: "staging", policyVersion: 2 }, moves: [], promotions: [] });
    expect((await as("max").environments.list.query({ org: "acme" })).map((e) => e.name)).toEqual([
      "staging",
      "production",
    ]);
    expect(await as("max").promotions.inbox.query({ org: "acme" })).toEqual([]);
    // The promotion form's choices (issue 29): none before a build; the engine test has real ones.
    expect(await as("max").environments.artifacts.query({ org: "acme", environmentId: staging.id })).toEqual([]);
    expect(
      await codeOf(
        as("ada").environments.setPolicy.mutate({
          org: "acme",
          environmentId: prod.id,
          policy: { fail_mode: "open", gates: {} },
        }),
      ),
    ).toEqual({ code: "UNPROCESSABLE_CONTENT", domainCode: "POLICY.INVALID" });
  });

  it("members cannot create or set policy; another org's admin cannot see or touch acme's environments", async () => {
    const [env] = await as("ada").environments.list.query({ org: "acme" });
    if (!env) throw new Error("no environment");
    expect(
      (
        await codeOf(
          as("max").environments.setPolicy.mutate({ org: "acme", environmentId: env.id, policy: { gates: {} } }),
        )
      ).code,
    ).toBe("FORBIDDEN");
    expect((await codeOf(as("max").environments.create.mutate({ org: "acme", repoId, name: "qa" }))).code).toBe(
      "FORBIDDEN",
    );
    expect(await codeOf(as("gus").environments.get.query({ org: "globex", environmentId: env.id }))).toEqual({
      code: "NOT_FOUND",
      domainCode: "ENV.NOT_FOUND",
    });
    expect(
      await codeOf(
        as("gus").environments.setPolicy.mutate({ org: "globex", environmentId: env.id, policy: { gates: {} } }),
      ),
    ).toEqual({ code: "NOT_FOUND", domainCode: "ENV.NOT_FOUND" });
    expect(await codeOf(as("gus").environments.create.mutate({ org: "globex", repoId, name: "evil" }))).toEqual({
      code: "NOT_FOUND",
      domainCode: "REPO.NOT_FOUND",
    });
    expect((await codeOf(as("gus").environments.list.query({ org: "acme" }))).code).toMatch(/NOT_FOUND|FORBIDDEN/);
    expect(await codeOf(as("gus").environments.artifacts.query({ org: "globex", environmentId: env.id }))).toEqual({
      code: "NOT_FOUND",
      domainCode: "ENV.NOT_FOUND",
    });
    expect((await codeOf(as("gus").environments.artifacts.query({ org: "acme", environmentId: env.id }))).code).toMatch(
      /NOT_FOUND|FORBIDDEN/,
    );
    const rb = await codeOf(
      as("gus").environments.rollback.mutate({
        org: "globex",
        environmentId: env.id,
        toArtifactId: env.id,
        reason: "x",
      }),
    );
    expect(rb.code).toBe("NOT_FOUND");
  });
});
