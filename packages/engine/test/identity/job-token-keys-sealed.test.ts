import { randomBytes, randomUUID } from "node:crypto";
import { createDb, type Db } from "@kiln/db";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { authenticateJobToken } from "../../src/identity/authenticate.ts";
import { kekFromBytes, type IdentityKek } from "../../src/identity/identity-kek.ts";
import { bindJobTokenKek, jobTokenKeyring, platformKey, rotateJobTokenKey } from "../../src/identity/job-token-keys.ts";
import { checkJobToken, signJobToken } from "../../src/identity/tokens.ts";
import { useTestDb } from "../support.ts";

// Issue 28 (low): the job-token HMAC key sat in clear in job_token_key, so anyone who could read the
// database (a backup, a replica, a read-only role) could mint a job token for any attempt. It is now
// sealed under the identity KEK, which the database does not hold (ADR 0018 "Amended (issue 28)").
const t = useTestDb();
const KEK = kekFromBytes(randomBytes(32));
const OTHER_KEK = kekFromBytes(randomBytes(32));
const opened: Db[] = [];

/** Another control-plane process on the same database: its own Db, keyring and KEK. */
function controlPlane(kek: IdentityKek | null): Db {
  const db = createDb({ url: t.url(), max: 2 });
  if (kek) bindJobTokenKek(db, kek);
  opened.push(db);
  return db;
}

afterAll(async () => {
  await Promise.all(opened.map((db) => db.$disconnect()));
});

type Row = { kid: string; secret: string | null; secret_sealed: Uint8Array | null; kek_id: string | null };
const rows = () =>
  t.db().$queryRaw<Row[]>`SELECT kid, secret, secret_sealed, kek_id FROM job_token_key ORDER BY created_at, kid`;

/** The table as it was before migration 0031: a signing key and a retired one, both in clear. */
async function clearKeysFromBefore(): Promise<{ signing: Buffer; retired: Buffer }> {
  const signing = randomBytes(32);
  const retired = randomBytes(32);
  await t.db().$executeRaw`DELETE FROM job_token_key`;
  await t.db().$executeRaw`
    INSERT INTO job_token_key (kid, secret, created_at, retired_at, verify_until)
    VALUES ('kold', ${retired.toString("base64")}, now() - interval '2 days', now() - interval '1 hour', now() + interval '1 day'),
           ('kcur', ${signing.toString("base64")}, now() - interval '1 hour', NULL, NULL)`;
  return { signing, retired };
}

const claims = () => ({ jobId: randomUUID(), attemptId: randomUUID(), epoch: 1 });
const auth = (db: Db, token: string, jobId: string) => authenticateJobToken(db, `Bearer ${token}`, jobId);

describe("job-token keys sealed at rest", () => {
  beforeEach(async () => {
    await t.db().$executeRaw`DELETE FROM job_token_key`;
  });

  it("seals the clear keys on first use; tokens they signed before still verify, in a fresh process too", async () => {
    const keys = await clearKeysFromBefore();
    const c = claims();
    const before = signJobToken({ kid: "kcur", key: keys.signing }, c);
    const c2 = claims();
    const beforeRetired = signJobToken({ kid: "kold", key: keys.retired }, c2);

    const web = controlPlane(KEK);
    await expect(auth(web, before, c.jobId)).resolves.toEqual(c);

    const after = await rows();
    expect(after.map((r) => r.kid).sort()).toEqual(["kcur", "kold"]);
    for (const r of after) {
      expect(r.secret).toBeNull();
      expect(r.kek_id).toBe(KEK.id);
      expect(r.secret_sealed?.length).toBeGreaterThan(32);
    }
    // The signing key is unchanged (sealed, not replaced), so running attempts keep their tokens.
    expect(await platformKey(web)).toEqual({ kid: "kcur", key: keys.signing });

    // A process started after the sealing reads only sealed rows.
    const later = controlPlane(KEK);
    await expect(auth(later, before, c.jobId)).resolves.toEqual(c);
    await expect(auth(later, beforeRetired, c2.jobId)).resolves.toEqual(c2);
  });

  it("someone with only the database cannot recover the key or mint a token", async () => {
    const keys = await clearKeysFromBefore();
    const web = controlPlane(KEK);
    await platformKey(web);
    const fresh = await rotateJobTokenKey(web);
    const signing = await platformKey(web);
    expect(signing.kid).toBe(fresh.kid);

    // Everything a database reader has: every column of every row, as stored.
    const dump = await t.db().$queryRaw<{ row: string }[]>`SELECT row_to_json(k)::text AS row FROM job_token_key k`;
    const text = dump.map((d) => d.row).join("\n");
    for (const secret of [keys.signing, keys.retired, signing.key]) {
      expect(text).not.toContain(secret.toString("base64"));
      expect(text).not.toContain(secret.toString("hex"));
      expect(text).not.toContain(secret.toString("base64url"));
    }
    for (const r of await rows()) {
      const sealed = Buffer.from(r.secret_sealed ?? []);
      for (const secret of [keys.signing, keys.retired, signing.key]) expect(sealed.indexOf(secret)).toBe(-1);
    }

    // The attacker's best guess: every 32-byte window of the stored bytes as the HMAC key.
    const c = claims();
    const ring = await jobTokenKeyring(web);
    let accepted = 0;
    for (const r of await rows()) {
      const sealed = Buffer.from(r.secret_sealed ?? []);
      for (let i = 0; i + 32 <= sealed.length; i++) {
        const forged = signJobToken({ kid: r.kid, key: sealed.subarray(i, i + 32) }, c);
        if (checkJobToken(ring, forged).ok) accepted++;
      }
      const whole = signJobToken({ kid: r.kid, key: sealed }, c);
      await expect(auth(web, whole, c.jobId)).rejects.toMatchObject({ code: "AUTH.UNAUTHENTICATED" });
    }
    expect(accepted).toBe(0);
    // And the honest key still signs what the server accepts (the check above can fail).
    await expect(auth(web, signJobToken(signing, c), c.jobId)).resolves.toEqual(c);
  });

  it("a process holding another KEK refuses with both ids named, and seals nothing", async () => {
    await clearKeysFromBefore();
    const web = controlPlane(KEK);
    const c = claims();
    const token = signJobToken(await platformKey(web), c);

    const wrong = controlPlane(OTHER_KEK);
    const refusal = {
      code: "JOB_TOKEN.KEY_UNAVAILABLE",
      message: expect.stringMatching(new RegExp(`kcur.*${KEK.id}.*${OTHER_KEK.id}`)),
    };
    await expect(platformKey(wrong)).rejects.toMatchObject(refusal);
    // A 503 for the operator, never a token accepted or a 401 the agent takes for a fenced attempt.
    await expect(auth(wrong, token, c.jobId)).rejects.toMatchObject(refusal);
    // The scheduled rotation (every worker runs it) does not move the keys to its own KEK either.
    await expect(rotateJobTokenKey(wrong, { ifOlderThanMs: 0 })).rejects.toMatchObject(refusal);
    expect((await rows()).every((r) => r.kek_id === KEK.id && r.secret === null)).toBe(true);
    await expect(auth(web, token, c.jobId)).resolves.toEqual(c);
  });

  it("a process with no KEK refuses and writes no key in clear", async () => {
    const none = controlPlane(null);
    await expect(platformKey(none)).rejects.toMatchObject({ code: "JOB_TOKEN.KEY_UNAVAILABLE" });
    await expect(rotateJobTokenKey(none)).rejects.toMatchObject({ code: "JOB_TOKEN.KEY_UNAVAILABLE" });
    expect(await rows()).toEqual([]);
    // The first process that has it creates the key, sealed.
    const web = controlPlane(KEK);
    const key = await platformKey(web);
    expect(await rows()).toEqual([{ kid: key.kid, secret: null, secret_sealed: expect.anything(), kek_id: KEK.id }]);
  });

  it("a sealed key copied onto another kid's row does not open", async () => {
    await clearKeysFromBefore();
    const web = controlPlane(KEK);
    await platformKey(web);
    // A database writer swaps the retired row's sealed bytes for the signing key's.
    await t.db().$executeRaw`
      UPDATE job_token_key SET secret_sealed = (SELECT secret_sealed FROM job_token_key WHERE kid = 'kcur')
      WHERE kid = 'kold'`;
    await expect(platformKey(controlPlane(KEK))).rejects.toMatchObject({
      code: "JOB_TOKEN.KEY_UNAVAILABLE",
      message: expect.stringContaining("kold"),
    });
  });

  it("processes sealing at once agree on one sealed copy of the same key", async () => {
    const keys = await clearKeysFromBefore();
    const got = await Promise.all([1, 2, 3, 4].map(() => platformKey(controlPlane(KEK))));
    for (const k of got) expect(k).toEqual({ kid: "kcur", key: keys.signing });
    expect((await rows()).every((r) => r.secret === null && r.kek_id === KEK.id)).toBe(true);
  });

  it("a manual rotation under a new KEK moves signing to it; the old KEK's process is then refused", async () => {
    await clearKeysFromBefore();
    const oldWeb = controlPlane(KEK);
    const c = claims();
    const oldToken = signJobToken(await platformKey(oldWeb), c);

    const cli = controlPlane(OTHER_KEK);
    const r = await rotateJobTokenKey(cli);
    expect(r).toMatchObject({ rotated: true, retired: "kcur", kekId: OTHER_KEK.id });

    const newWeb = controlPlane(OTHER_KEK);
    const fresh = claims();
    await expect(auth(newWeb, signJobToken(await platformKey(newWeb), fresh), fresh.jobId)).resolves.toEqual(fresh);
    // Keys sealed under the previous KEK cannot be opened here: their tokens are refused (fail closed).
    await expect(auth(newWeb, oldToken, c.jobId)).rejects.toMatchObject({ code: "AUTH.UNAUTHENTICATED" });
    await expect(jobTokenKeyring(oldWeb, { reloadIfOlderThanMs: 0 })).rejects.toMatchObject({
      code: "JOB_TOKEN.KEY_UNAVAILABLE",
      message: expect.stringContaining(OTHER_KEK.id),
    });
  });
});
