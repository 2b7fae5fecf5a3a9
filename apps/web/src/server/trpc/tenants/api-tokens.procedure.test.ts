import { createDb, type Db } from "@kiln/db";
import { addMember, authenticateApiToken, createApiToken, createOrg } from "@kiln/engine";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { appRouter, type AppRouter } from "../router.ts";

// The tokens page's procedures through the real router and fetch handler, on a cloned real
// database: admins only, and scoped to the org in the query (another org's token is NOT_FOUND).
const dbName = uniqueDatabaseName("web_tokens");
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
    ["acme", "ada", "admin"],
    ["acme", "max", "member"],
    ["globex", "gus", "admin"],
  ] as const) {
    const { userId } = await addMember(db, { orgSlug: org, login, role });
    users[login] = { id: userId, login };
  }
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

describe("tokens.list / tokens.revoke", () => {
  it("an admin lists and revokes the org's own tokens; the token then stops working", async () => {
    const t = await createApiToken(db, { orgSlug: "acme", role: "member", name: "ci" });
    const listed = await as("ada").tokens.list.query({ org: "acme" });
    expect(listed.map((x) => [x.id, x.name, x.state])).toEqual([[t.id, "ci", "active"]]);
    const r = await as("ada").tokens.revoke.mutate({ org: "acme", tokenId: t.id });
    expect(r.state).toBe("revoked");
    await expect(authenticateApiToken(db, `Bearer ${t.token}`)).rejects.toMatchObject({ code: "AUTH.TOKEN_REVOKED" });
  });

  it("another org's admin gets NOT_FOUND for acme's token and sees none of them; members are refused", async () => {
    const t = await createApiToken(db, { orgSlug: "acme", role: "admin", name: "deploy" });
    expect(await codeOf(as("gus").tokens.revoke.mutate({ org: "globex", tokenId: t.id }))).toEqual({
      code: "NOT_FOUND",
      domainCode: "TOKEN.NOT_FOUND",
    });
    expect((await as("gus").tokens.list.query({ org: "globex" })).map((x) => x.id)).not.toContain(t.id);
    expect((await codeOf(as("gus").tokens.list.query({ org: "acme" }))).code).toMatch(/NOT_FOUND|FORBIDDEN/);
    expect((await codeOf(as("max").tokens.list.query({ org: "acme" }))).code).toMatch(/NOT_FOUND|FORBIDDEN/);
    expect((await codeOf(as("max").tokens.revoke.mutate({ org: "acme", tokenId: t.id }))).code).toMatch(
      /NOT_FOUND|FORBIDDEN/,
    );
    await expect(authenticateApiToken(db, `Bearer ${t.token}`)).resolves.toMatchObject({ role: "admin" });
    expect((await codeOf(as("ada").tokens.revoke.mutate({ org: "acme", tokenId: "nope" }))).code).toBe("BAD_REQUEST");
  });
});
