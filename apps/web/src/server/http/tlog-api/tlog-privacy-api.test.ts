import { randomBytes } from "node:crypto";
import { withTx } from "@kiln/db";
import { tlog } from "@kiln/domain";
import {
  appendTlogEntry,
  attestJob,
  completeAttempt,
  createApiToken,
  listAttestationKeys,
  logVerifierKey,
  tlogSize,
  verifyOffline,
} from "@kiln/engine";
import {
  attestorDeps,
  bytes,
  checkpoint,
  claim,
  claimsOf,
  def,
  newSession,
  PRODUCER_CONSUMER,
  publish,
  seedFrozenRun,
  seedTenant,
  sha256,
  TEST_CFG,
  useJournalPool,
  useS3,
  useSigner,
  useTestDb,
  type Tenant,
} from "@kiln/engine/testing";
import { beforeAll, describe, expect, it } from "vitest";

// Issue 28 (A) over HTTP, as Next calls the routes (the exported handlers, a real Request, a real
// database): an anonymous reader of every public log endpoint finds none of a private repo's text;
// the envelope goes only to the org's token, or to anyone once an admin marks the repo public.
const t = useTestDb();
const s3 = useS3();
const pool = useJournalPool(t.url);
const signer = useSigner();

const marker = randomBytes(6).toString("hex");
const CLONE_URL = `https://git.example/acme-${marker}/secret-project-${marker}.git`;
const BRANCH = `refs/heads/hidden-${marker}`;
const INPUT_VALUE = `typed-by-a-member-${marker}`;

type Handler = (req: Request, ctx: { params: Promise<Record<string, string>> }) => Promise<Response>;
let routes: { entry: Handler; bundle: Handler; tile: Handler; checkpoint: Handler; visibility: Handler };
let tenant: Tenant;
let other: Tenant;
let admin = "";
let index = 0n;
let fileSha = "";

const call = (h: Handler, path: string, params: Record<string, string>, token?: string, body?: unknown) =>
  h(
    new Request(`http://kiln.test${path}`, {
      method: body === undefined ? "GET" : "PUT",
      headers: {
        ...(token ? { authorization: `Bearer ${token}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }),
    { params: Promise.resolve(params) },
  );
const errorCode = async (r: Response) => ((await r.json()) as { error: { code: string } }).error.code;

beforeAll(async () => {
  // The routes' services() read the web env once, at first use: this file's database.
  process.env.DATABASE_URL = t.url();
  tenant = await seedTenant(t.db(), { cloneUrl: CLONE_URL });
  other = await seedTenant(t.db());
  admin = (await createApiToken(t.db(), { orgSlug: tenant.slug, role: "admin" })).token;
  const s = await newSession(t.db(), tenant);
  const runId = await seedFrozenRun(t.db(), tenant, def(PRODUCER_CONSUMER), "trusted", BRANCH);
  await t.db().$executeRaw`UPDATE workflow_run SET inputs = ${JSON.stringify({ target: INPUT_VALUE })}::jsonb
    WHERE id = ${runId}::uuid`;
  const p = (await claim(t.db(), s))!;
  const data = bytes(100_000, 11);
  fileSha = sha256(data);
  await publish(t.db(), s3.store(), p, "app", data);
  await completeAttempt(t.db(), TEST_CFG, { ...claimsOf(p), outcome: "success", sandboxDestroyed: true });
  const r = await attestJob(attestorDeps(t.db(), pool(), s3.store(), signer()), { jobId: p.jobId, epoch: 1 });
  if (r.kind !== "attested") throw new Error(`not attested: ${r.kind}`);
  index = r.tlogIndex;
  await checkpoint(t.db());
  routes = {
    entry: (await import("@/app/v1/tlog/entries/[index]/route.ts")).GET as never,
    bundle: (await import("@/app/v1/tlog/entries/[index]/bundle/route.ts")).GET as never,
    tile: (await import("@/app/tlog/tile/[...path]/route.ts")).GET as never,
    checkpoint: (await import("@/app/tlog/checkpoint/route.ts")).GET as never,
    visibility: (await import("@/app/v1/repos/[repoId]/provenance-visibility/route.ts")).PUT as never,
  };
}, 180_000);

describe("the public transparency log over HTTP (issue 28)", () => {
  it("an anonymous walk of every entry, tile and the checkpoint finds no private repo text", async () => {
    const size = await tlogSize(t.db());
    const seen: string[] = [];
    const get = async (h: Handler, path: string, params: Record<string, string> = {}) => {
      const res = await call(h, path, params);
      expect(res.status, path).toBe(200);
      seen.push(Buffer.from(await res.arrayBuffer()).toString("latin1"));
    };
    for (let i = 0; i < size; i++) await get(routes.entry, `/v1/tlog/entries/${i}`, { index: String(i) });
    const width = tlog.tileWidthAt(size, 0, 0);
    await get(routes.tile, `/tlog/${tlog.tilePath({ level: null, index: 0, width })}`);
    await get(routes.tile, `/tlog/${tlog.tilePath({ level: 0, index: 0, width })}`);
    await get(routes.checkpoint, "/tlog/checkpoint");
    const text = seen.join("\n");
    const decoded = [...text.matchAll(/[A-Za-z0-9+/]{16,}={0,2}/g)].map((m) =>
      Buffer.from(m[0], "base64").toString("latin1"),
    );
    const all = [text, ...decoded].join("\n");
    for (const x of [tenant.slug, tenant.orgId, tenant.repoName, CLONE_URL, BRANCH, INPUT_VALUE, marker])
      expect(all, x).not.toContain(x);
  });

  it("serves the envelope by log index to the org's token only; a public repo's to anyone", async () => {
    const path = `/v1/tlog/entries/${index}/bundle`;
    const params = { index: String(index) };
    const anon = await call(routes.bundle, path, params);
    expect([anon.status, await errorCode(anon)]).toEqual([404, "ATTESTATION.NOT_FOUND"]);
    const stranger = await call(routes.bundle, path, params, other.token);
    expect([stranger.status, await errorCode(stranger)]).toEqual([404, "ATTESTATION.NOT_FOUND"]);
    const forged = await call(routes.bundle, path, params, "kiln_not-a-token");
    expect(forged.status).toBe(401);

    const mine = await call(routes.bundle, path, params, tenant.token);
    expect(mine.status).toBe(200);
    const bundle = (await mine.json()) as unknown;
    const keys = (await listAttestationKeys(t.db())).map((k) => ({ keyId: k.key_id, spkiPem: k.spki_pem }));
    const logKey = (await logVerifierKey(t.db()))!;
    expect(
      verifyOffline({ fileSha256: fileSha, bundle, keys, logVerifierKey: logKey, source: CLONE_URL }),
    ).toMatchObject({
      ok: true,
    });

    // Only an admin of the repo's own org can make it public.
    const vPath = `/v1/repos/${tenant.repoId}/provenance-visibility`;
    const member = await call(routes.visibility, vPath, { repoId: tenant.repoId }, tenant.token, { public: true });
    expect([member.status, await errorCode(member)]).toEqual([403, "AUTH.FORBIDDEN"]);
    const otherAdmin = (await createApiToken(t.db(), { orgSlug: other.slug, role: "admin" })).token;
    const foreign = await call(routes.visibility, vPath, { repoId: tenant.repoId }, otherAdmin, { public: true });
    expect([foreign.status, await errorCode(foreign)]).toEqual([404, "REPO.NOT_FOUND"]);
    const bad = await call(routes.visibility, vPath, { repoId: tenant.repoId }, admin, { public: "yes" });
    expect(bad.status).toBe(400);
    const ok = await call(routes.visibility, vPath, { repoId: tenant.repoId }, admin, { public: true });
    expect(await ok.json()).toMatchObject({ provenance_public: true, changed: true });
    const now = await call(routes.bundle, path, params);
    expect(now.status).toBe(200);
  });

  it("withholds an envelope logged in full before issue 28 (410), entry and entry bundle", async () => {
    const legacy = await withTx(t.db(), "t", (tx) =>
      appendTlogEntry(tx, { kind: "dsse", bytes: new TextEncoder().encode('{"payload":"old"}'), dedupeKey: "legacy" }),
    );
    const res = await call(routes.entry, `/v1/tlog/entries/${legacy.index}`, { index: String(legacy.index) });
    expect([res.status, await errorCode(res)]).toEqual([410, "TLOG.ENTRY_WITHHELD"]);
    const width = tlog.tileWidthAt(legacy.index + 1, 0, 0);
    const tile = await call(routes.tile, `/tlog/${tlog.tilePath({ level: null, index: 0, width })}`, {});
    expect([tile.status, await errorCode(tile)]).toEqual([410, "TLOG.ENTRY_WITHHELD"]);
    const hashes = await call(routes.tile, `/tlog/${tlog.tilePath({ level: 0, index: 0, width })}`, {});
    expect(hashes.status).toBe(200);
  });
});
