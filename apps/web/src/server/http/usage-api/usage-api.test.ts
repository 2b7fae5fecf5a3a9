import { completeAttempt, setMinuteQuota } from "@kiln/engine";
import {
  claim,
  def,
  newSession,
  ONE_JOB,
  seedFrozenRun,
  seedTenant,
  TEST_CFG,
  useTestDb,
  type Tenant,
} from "@kiln/engine/testing";
import { beforeAll, describe, expect, it } from "vitest";

// Showback over HTTP (issue 33, docs/adr/0045), as Next calls the route (the exported handler, a
// real Request, a real database): the CSV's seconds sum to the JSON's totals, and another org's
// token learns nothing about this org's usage.
const t = useTestDb();

type Handler = (req: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
let usage: Handler;
let tenant: Tenant;
let other: Tenant;

const call = (org: string, qs: string, token?: string) =>
  usage(
    new Request(`http://kiln.test/v1/orgs/${org}/usage${qs}`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
    }),
    { params: Promise.resolve({ org }) },
  );
const errorCode = async (r: Response) => ((await r.json()) as { error: { code: string } }).error.code;

/** Runs one job to `outcome` that looks `seconds` long. */
async function runJob(ten: Tenant, session: string, seconds: number, outcome: "success" | "platform_failure") {
  await seedFrozenRun(t.db(), ten, def(ONE_JOB));
  const tk = await claim(t.db(), session);
  if (!tk) throw new Error("nothing claimed");
  await t.db().$executeRaw`UPDATE attempt SET claimed_at = now() - make_interval(secs => ${seconds})
    WHERE id = ${tk.attemptId}::uuid`;
  // A bound cache entry this attempt saved (the row finalize-save leaves), for the storage lines.
  await t.db().$executeRaw`
    INSERT INTO cache_entry (id, org_id, repo_id, namespace, ref, kind, cache_key, prefix_key, object_key, size_bytes, sha256,
                             unpacked_bytes, entry_count, state, run_id, job_id, attempt_id, epoch)
    VALUES (gen_random_uuid(), ${ten.orgId}::uuid, ${ten.repoId}::uuid, 'trusted', 'refs/heads/main', 'directory',
            encode(sha256(convert_to(${tk.attemptId}, 'UTF8')), 'hex'), ${"0".repeat(64)}, ${`caches/${tk.attemptId}`}, 1000, ${"0".repeat(64)}, 2000, 1, 'bound',
            ${tk.runId}::uuid, ${tk.jobId}::uuid, ${tk.attemptId}::uuid, ${tk.epoch})`;
  await completeAttempt(t.db(), TEST_CFG, {
    attemptId: tk.attemptId,
    jobId: tk.jobId,
    epoch: tk.epoch,
    outcome,
    sandboxDestroyed: true,
  });
}

interface Report {
  storage: { repo: string; kind: string; retentionClass: string; objects: number; bytes: number }[];
  totals: { attempts: number; seconds: number; billableSeconds: number; quotaSeconds: number };
  minutes: { repo: string; seconds: number; billableSeconds: number }[];
  daily: { day: string; seconds: number }[];
  quota: { level: string; quotaMinutes: number | null };
}

beforeAll(async () => {
  // The routes' services() read the web env once, at first use: this file's database.
  process.env.DATABASE_URL = t.url();
  tenant = await seedTenant(t.db());
  other = await seedTenant(t.db());
  const s = await newSession(t.db(), tenant);
  await runJob(tenant, s, 125, "success");
  await runJob(tenant, s, 40, "platform_failure");
  await runJob(tenant, s, 10, "success");
  const o = await newSession(t.db(), other);
  await runJob(other, o, 999, "success");
  await setMinuteQuota(t.db(), { orgSlug: tenant.slug, minutes: 100, actor: "cli:test" });
  usage = (await import("@/app/v1/orgs/[org]/usage/route.ts")).GET as never;
}, 120_000);

describe("GET /v1/orgs/{org}/usage", () => {
  it("reports this month's minutes by repo, pool and size, and the CSV's seconds sum to the JSON totals", async () => {
    const res = await call(tenant.slug, "", tenant.token);
    expect(res.status).toBe(200);
    const r = (await res.json()) as Report;
    expect(r.totals.attempts).toBe(3);
    expect(r.totals.seconds).toBeGreaterThanOrEqual(175);
    // The platform failure's seconds are recorded and not billable.
    expect(r.totals.seconds - r.totals.billableSeconds).toBeGreaterThanOrEqual(40);
    expect(r.totals.billableSeconds).toBeLessThan(r.totals.seconds);
    expect(r.minutes.every((m) => m.repo === tenant.repoName)).toBe(true);
    expect(r.daily.reduce((n, d) => n + d.seconds, 0)).toBe(r.totals.seconds);
    expect(r.quota).toMatchObject({ quotaMinutes: 100, level: "ok" });

    const csvRes = await call(tenant.slug, "?format=csv", tenant.token);
    expect(csvRes.status).toBe(200);
    expect(csvRes.headers.get("content-type")).toMatch(/^text\/csv/);
    const [header, ...lines] = (await csvRes.text()).trim().split("\n");
    const cols = (header ?? "").split(",");
    const minutes = lines.map((l) => l.split(",")).filter((c) => c[0] === "minutes");
    const sum = (name: string) => minutes.reduce((n, c) => n + Number(c[cols.indexOf(name)]), 0);
    expect(sum("seconds")).toBe(r.totals.seconds);
    expect(sum("billable_seconds")).toBe(r.totals.billableSeconds);
    expect(sum("attempts")).toBe(r.totals.attempts);
    // Storage: the three cache entries (1000 bytes each) under the `lru` class, in JSON and CSV alike.
    expect(r.storage).toEqual([
      { repo: tenant.repoName, kind: "cache", retentionClass: "lru", objects: 3, bytes: 3000 },
    ]);
    const storage = lines.map((l) => l.split(",")).filter((c) => c[0] === "storage");
    expect(storage.map((c) => [c[cols.indexOf("retention_class")], c[cols.indexOf("bytes")]])).toEqual([
      ["lru", "3000"],
    ]);
  });

  it("an explicit period that holds none of the usage reports none", async () => {
    const res = await call(tenant.slug, "?from=2020-01-01&to=2020-02-01", tenant.token);
    expect(res.status).toBe(200);
    const r = (await res.json()) as Report;
    expect(r.totals).toEqual({ attempts: 0, seconds: 0, billableSeconds: 0, quotaSeconds: 0 });
    expect(r.minutes).toEqual([]);
  });

  it("another org's token gets 404 for this org, in JSON and CSV, and its own report holds only its own usage", async () => {
    for (const qs of ["", "?format=csv"]) {
      const res = await call(tenant.slug, qs, other.token);
      expect(res.status).toBe(404);
      expect(await errorCode(res)).toBe("ORG.NOT_FOUND");
    }
    const own = (await (await call(other.slug, "", other.token)).json()) as Report;
    expect(own.totals.attempts).toBe(1);
    expect(own.minutes.every((m) => m.repo === other.repoName)).toBe(true);
    const anon = await call(tenant.slug, "");
    expect(anon.status).toBe(401);
  });

  it("refuses a malformed or inverted period with 400 REQUEST.INVALID", async () => {
    for (const qs of [
      "?from=yesterday",
      "?from=2026-02-01&to=2026-01-01",
      "?format=xml",
      "?from=2020-01-01&to=2026-01-01",
    ]) {
      const res = await call(tenant.slug, qs, tenant.token);
      expect(res.status, qs).toBe(400);
      expect(await errorCode(res)).toBe("REQUEST.INVALID");
    }
  });
});
