import { createDb, type Db } from "@kiln/db";
import { addMember, createOrg, setPlatformAdmin } from "@kiln/engine";
import { cloneDatabase, dropDatabase, uniqueDatabaseName } from "@kiln/testkit";
import { createTRPCClient, httpLink, TRPCClientError } from "@trpc/client";
import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { appRouter, type AppRouter } from "../router.ts";

// The org settings procedures through the real router and the same fetch handler the app route
// uses (input parsing, tenant middleware, error map and formatter), on a cloned real database: who
// may read and write, what bad input answers, what is audited. Only the HTTP socket is skipped.
const dbName = uniqueDatabaseName("web_settings");
let db: Db;
const users: Record<string, { id: string; login: string }> = {};
const as = (login: string | null) =>
  createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: "http://kiln.test/api/trpc",
        fetch: (url, init) =>
          fetchRequestHandler({
            endpoint: "/api/trpc",
            req: new Request(url, init as RequestInit),
            router: appRouter,
            createContext: () => ({ db, user: login ? (users[login] ?? null) : null }),
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
    ["acme", "aud", "auditor"],
    ["globex", "gus", "admin"],
  ] as const) {
    const { userId } = await addMember(db, { orgSlug: org, login, role });
    users[login] = { id: userId, login };
  }
  // A platform operator: flagged on the server, a member of globex only (not of acme).
  const { userId } = await addMember(db, { orgSlug: "globex", login: "ops", role: "member", forgeId: 7_000_001 });
  await setPlatformAdmin(db, { login: "ops", admin: true });
  users.ops = { id: userId, login: "ops" };
});

afterAll(async () => {
  await db?.$disconnect();
  await dropDatabase(inject("pgServerUrl"), dbName);
});

/** The tRPC code and the formatted error message the browser would receive. */
async function refusal(
  p: Promise<unknown>,
): Promise<{ code: string; message: string; fieldErrors: Record<string, string> | null; domainCode: string | null }> {
  try {
    await p;
  } catch (e) {
    if (e instanceof TRPCClientError)
      return {
        code: e.data?.code,
        message: e.message,
        fieldErrors: e.data?.fieldErrors ?? null,
        domainCode: e.data?.domainCode ?? null,
      };
    throw e;
  }
  throw new Error("expected a refusal, got success");
}

const auditCount = async () => {
  const [r] = await db.$queryRaw<{ n: number }[]>`
    SELECT ((SELECT count(*) FROM entitlement_change) + (SELECT count(*) FROM egress_rule_change))::int AS n`;
  return r?.n ?? -1;
};

describe("org settings over tRPC", () => {
  it("a platform admin sets an entitlement, an org admin edits the allow-list; each change is one audit row, read back in order", async () => {
    const before = await auditCount();
    const set = await as("ops").tenants.setEntitlement.mutate({
      org: "acme",
      pool: "default",
      slots: 4,
      weight: 3,
      hardCap: 6,
    });
    expect(set).toMatchObject({ org: "acme", pool: "default", slots: 4, weight: 3, hard_cap: 6, running: 0 });
    await as("ops").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 5, weight: 3, hardCap: null });
    expect(
      (await as("ada").tenants.allowEgressHost.mutate({ org: "acme", pattern: " Registry.NPMjs.org. " })).rule.pattern,
    ).toBe("registry.npmjs.org");
    await as("ada").tenants.allowEgressHost.mutate({ org: "acme", pattern: "*.github.com" });
    await as("ada").tenants.removeEgressHost.mutate({ org: "acme", pattern: "*.github.com" });
    expect(await auditCount()).toBe(before + 5);

    const s = await as("ada").tenants.settings.query({ org: "acme" });
    expect(s.entitlements).toEqual([
      expect.objectContaining({ pool: "default", slots: 5, weight: 3, hard_cap: null, running: 0 }),
    ]);
    expect(s.egress.map((e) => [e.pattern, e.created_by])).toEqual([["registry.npmjs.org", "web:ada"]]);
    expect(
      s.changes.map((c) =>
        c.kind === "entitlement" ? `${c.pool} ${c.before?.slots ?? "-"}→${c.after.slots}` : `${c.action} ${c.pattern}`,
      ),
    ).toEqual(["remove *.github.com", "allow *.github.com", "allow registry.npmjs.org", "default 4→5", "default -→4"]);
    expect(new Set(s.changes.map((c) => c.actor))).toEqual(new Set(["web:ada", "web:ops (platform admin)"]));
    const [audit] = await db.$queryRaw<{ actor: string; before: unknown; after: unknown }[]>`
      SELECT actor, before, after FROM entitlement_change ORDER BY id DESC LIMIT 1`;
    expect(audit).toEqual({
      actor: "web:ops (platform admin)",
      before: { slots: 4, weight: 3, hard_cap: 6 },
      after: { slots: 5, weight: 3, hard_cap: null },
    });
    expect(await as("ops").tenants.capacityRights.query()).toEqual({ platformAdmin: true });
    expect(await as("ada").tenants.capacityRights.query()).toEqual({ platformAdmin: false });
  });

  it("an org admin may not raise its own slots or weight (403 with a code) but may lower its hard cap, audited", async () => {
    await as("ops").tenants.setEntitlement.mutate({ org: "acme", pool: "shared", slots: 2, weight: 1, hardCap: 8 });
    const before = await auditCount();
    for (const raise of [
      { slots: 10_000, weight: 1, hardCap: null },
      { slots: 2, weight: 1000, hardCap: 8 },
      { slots: 2, weight: 1, hardCap: 6 },
    ]) {
      const r = await refusal(as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "shared", ...raise }));
      expect(r).toMatchObject({ code: "FORBIDDEN", domainCode: "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED" });
      expect(r.message).toMatch(/set by platform operators/);
    }
    const raiseCap = await refusal(as("ada").tenants.lowerHardCap.mutate({ org: "acme", pool: "shared", hardCap: 9 }));
    expect(raiseCap).toMatchObject({ code: "FORBIDDEN", domainCode: "ENTITLEMENT.PLATFORM_ADMIN_REQUIRED" });
    expect(
      (await refusal(as("ada").tenants.lowerHardCap.mutate({ org: "acme", pool: "nowhere", hardCap: 1 }))).domainCode,
    ).toBe("ENTITLEMENT.PLATFORM_ADMIN_REQUIRED");
    expect(
      (await refusal(as("max").tenants.lowerHardCap.mutate({ org: "acme", pool: "shared", hardCap: 1 }))).code,
    ).toBe("FORBIDDEN");
    expect(await auditCount()).toBe(before);

    expect(await as("ada").tenants.lowerHardCap.mutate({ org: "acme", pool: "shared", hardCap: 3 })).toMatchObject({
      pool: "shared",
      slots: 2,
      weight: 1,
      hard_cap: 3,
    });
    const [audit] = await db.$queryRaw<{ actor: string; before: unknown; after: unknown }[]>`
      SELECT actor, before, after FROM entitlement_change ORDER BY id DESC LIMIT 1`;
    expect(audit).toEqual({
      actor: "web:ada",
      before: { slots: 2, weight: 1, hard_cap: 8 },
      after: { slots: 2, weight: 1, hard_cap: 3 },
    });
    expect(await auditCount()).toBe(before + 1);
  });

  it("members and auditors read but may not write (FORBIDDEN, nothing written)", async () => {
    const before = await auditCount();
    for (const login of ["max", "aud"]) {
      expect((await as(login).tenants.settings.query({ org: "acme" })).entitlements.length).toBeGreaterThan(0);
      const r = await refusal(
        as(login).tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 99, weight: 1 }),
      );
      expect(r.code).toBe("FORBIDDEN");
      expect(r.message).toMatch(/set by platform operators/);
      expect(
        (await refusal(as(login).tenants.allowEgressHost.mutate({ org: "acme", pattern: "evil.example.com" }))).code,
      ).toBe("FORBIDDEN");
      expect(
        (await refusal(as(login).tenants.removeEgressHost.mutate({ org: "acme", pattern: "registry.npmjs.org" }))).code,
      ).toBe("FORBIDDEN");
    }
    expect(await auditCount()).toBe(before);
    expect((await as("ada").tenants.settings.query({ org: "acme" })).entitlements[0]?.slots).toBe(5);
    expect(
      (await refusal(as("aud").tenants.allowEgressHost.mutate({ org: "acme", pattern: "x.example.com" }))).message,
    ).toMatch(/cannot do this; it needs admin/);
  });

  it("another org's admin can neither see nor change acme's settings, and is answered as for a missing org", async () => {
    const before = await auditCount();
    const seen = await refusal(as("gus").tenants.settings.query({ org: "acme" }));
    const missing = await refusal(as("gus").tenants.settings.query({ org: "no-such-org" }));
    expect(seen.code).toBe("FORBIDDEN");
    // The same answer whether or not the org exists, so slugs cannot be probed (ADR 0010).
    expect(seen.message.replace("acme", "X")).toBe(missing.message.replace("no-such-org", "X"));
    expect(
      (await refusal(as("gus").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 0, weight: 1 })))
        .code,
    ).toBe("FORBIDDEN");
    expect(
      (await refusal(as("gus").tenants.removeEgressHost.mutate({ org: "acme", pattern: "registry.npmjs.org" }))).code,
    ).toBe("FORBIDDEN");
    expect(await auditCount()).toBe(before);
    expect(await as("gus").tenants.settings.query({ org: "globex" })).toEqual({
      entitlements: [],
      egress: [],
      changes: [],
      cache_conflicts: [],
    });
    expect((await refusal(as(null).tenants.settings.query({ org: "acme" }))).code).toBe("UNAUTHORIZED");
  });

  it("bad input is a BAD_REQUEST with a clear message and writes nothing", async () => {
    const before = await auditCount();
    // Thunks, run one at a time: each refusal is awaited before the next call starts.
    const bad: [() => Promise<unknown>, RegExp][] = [
      [
        () => as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 10_001, weight: 1 }),
        /slots: must be at most 10000/,
      ],
      [
        () => as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 1.5, weight: 1 }),
        /slots: must be a whole number/,
      ],
      [
        () => as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 2, weight: 0 }),
        /weight: must be at least 1/,
      ],
      [
        () =>
          as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 8, weight: 2, hardCap: 4 }),
        /hardCap: must be at least the slots/,
      ],
      [
        () => as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "Big Pool", slots: 1, weight: 1 }),
        /pool: use lowercase letters/,
      ],
      [
        () => as("ada").tenants.allowEgressHost.mutate({ org: "acme", pattern: "*.com" }),
        /a wildcard must keep at least two labels/,
      ],
      [
        () => as("ada").tenants.allowEgressHost.mutate({ org: "acme", pattern: "127.1" }),
        /not a host name or IP address/,
      ],
      [() => as("ada").tenants.allowEgressHost.mutate({ org: "acme", pattern: "   " }), /pattern: enter a host name/],
      [
        () => as("ada").tenants.removeEgressHost.mutate({ org: "acme", pattern: "never.example.com" }),
        /never\.example\.com is not on acme's egress allow-list/,
      ],
    ];
    for (const [call, message] of bad) {
      const r = await refusal(call());
      expect(r.code, r.message).toBe("BAD_REQUEST");
      expect(r.message).toMatch(message);
    }
    expect(
      (
        await refusal(
          as("ada").tenants.setEntitlement.mutate({ org: "acme", pool: "default", slots: 8, weight: 2, hardCap: 4 }),
        )
      ).fieldErrors,
    ).toEqual({ hardCap: "must be at least the slots, or empty for no cap" });
    expect(await auditCount()).toBe(before);
    const s = await as("ada").tenants.settings.query({ org: "acme" });
    expect(s.entitlements.map((e) => [e.pool, e.slots, e.weight])).toEqual([
      ["default", 5, 3],
      ["shared", 2, 1],
    ]);
    expect(s.egress.map((e) => e.pattern)).toEqual(["registry.npmjs.org"]);
  });
});
