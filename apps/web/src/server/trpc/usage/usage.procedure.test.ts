import { createDb, type Db } from "@kiln/db";
import { addMember, createOrg, setMinuteQuota } from "@kiln/engine";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { appRouter, type AppRouter } from "../router.ts";

// The usage page's procedures (issue 33) through the real router and fetch handler, on a cloned real
// database: members of the org read its usage and quota; a member of another org is refused in the
// tenant query; a bad period is BAD_REQUEST, not a 500.
const dbName = uniqueDatabaseName("web_usage");
let db: Db;
const users: Record<string, { id: string; login: string }> = {};
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
            createContext: () => ({ db, user: users[login] ?? null }),
          }),
      }),
    ],
  });

beforeAll(async () => {
  db = createDb({ url: await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), dbName), max: 4 });
  for (const slug of ["acme", "globex"]) await createOrg(db, slug);
  for (const [org, login, role] of [
    ["acme", "max", "member"],
    ["globex", "gus", "admin"],
  ] as const) {
    const { userId } = await addMember(db, { orgSlug: org, login, role });
    users[login] = { id: userId, login };
  }
  await setMinuteQuota(db, { orgSlug: "acme", minutes: 0, actor: "cli:test" });
});

afterAll(async () => {
  await db?.$disconnect();
  await dropDatabase(inject("pgServerUrl"), dbName);
});

async function codeOf(p: Promise<unknown>): Promise<string | undefined> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TRPCClientError) return e.data?.code as string | undefined;
    throw e;
  }
  throw new Error("expected a refusal, got success");
}

describe("usage over tRPC", () => {
  it("a member reads its org's usage and quota", async () => {
    const r = await as("max").usage.get.query({ org: "acme" });
    expect(r.totals).toEqual({ attempts: 0, seconds: 0, billableSeconds: 0, quotaSeconds: 0 });
    expect(r.daily).toEqual([]);
    // A quota of 0 minutes is used up from the start: the banner's "exhausted".
    expect(await as("max").usage.quota.query({ org: "acme" })).toMatchObject({ quotaMinutes: 0, level: "exhausted" });
  });

  it("another org's admin is refused both, and a bad period is BAD_REQUEST", async () => {
    expect(["NOT_FOUND", "FORBIDDEN"]).toContain(await codeOf(as("gus").usage.get.query({ org: "acme" })));
    expect(["NOT_FOUND", "FORBIDDEN"]).toContain(await codeOf(as("gus").usage.quota.query({ org: "acme" })));
    expect(await codeOf(as("max").usage.get.query({ org: "acme", from: "last tuesday" }))).toBe("BAD_REQUEST");
  });
});
