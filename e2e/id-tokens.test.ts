import { execFile } from "node:child_process";
import { createHmac, createPublicKey } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createApiToken, createOrg, listAuditEvents, setUntrustedIdTokens, verifyIdToken } from "@kiln/engine";
import { freePort } from "@kiln/testkit";
import { sign } from "@octokit/webhooks-methods";
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signIn, TestBrowser } from "./support/browser.ts";
import { Platform } from "./support/platform.ts";

// Issue 16 (ADR 0024), workload identity end to end: the real web server as OIDC issuer, a real
// job whose step asks the host agent's endpoint for a token with curl, and verifiers nobody on the
// team wrote: jose (createRemoteJWKSet + jwtVerify, algorithms, issuer and audience pinned), run
// under Debian's faketime for the clock-shifted case. Then: introspection active while the
// attempt runs and inactive once it ended, rotation with both kids served until the old one's last
// token expires, and the forged tokens jose must refuse.
const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, "..");
const PORT = await freePort();
const ISSUER = `http://127.0.0.1:${PORT}`;
const KEK_FILE = path.join(await mkdtemp(path.join(tmpdir(), "kiln-e2e-kek-")), "identity-kek");
const AUD = "https://deploy.example";
const p = new Platform(
  // Tokens live at most as long as the lease: 60 s leaves room for every check on a loaded machine.
  {
    KILN_PUBLIC_URL: ISSUER,
    KILN_IDENTITY_KEK_FILE: KEK_FILE,
    KILN_LEASE_TTL_MS: "60000",
    KILN_HEARTBEAT_MS: "1000",
    KILN_DEV_LOGIN: "1",
    AUTH_SECRET: "e2e-only-session-secret-0123456789abcdef",
  },
  // The fork PR case runs on the development pool's process agents (ADR 0022): this suite is about tokens.
  { webPort: PORT, untrustedOnProcess: true },
);
let tenant: Awaited<ReturnType<Platform["seedTenant"]>>;

const WORKFLOW = `version: 1
jobs:
  - name: deploy
    steps:
      - |
        tok=$(curl -sS -f -H "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN" "$KILN_ID_TOKEN_URL?audience=${AUD}")
        echo "TOKEN $tok"
        code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }
        echo "NOAUTH $(code "$KILN_ID_TOKEN_URL?audience=x")"
        echo "WRONG $(code -H 'Authorization: Bearer kirt_wrong' "$KILN_ID_TOKEN_URL?audience=x")"
        echo "OTHERPATH $(code -H "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN" "\${KILN_ID_TOKEN_URL%/_kiln/id-token}/v1/agent/claims")"
        echo "JOBTOKEN $(env | grep -c kjt_ || true)"
        sleep 25
`;

beforeAll(async () => {
  for (const tool of ["/usr/bin/curl", "/usr/bin/faketime"])
    if (!existsSync(tool)) throw new Error(`${tool} is missing (scripts/ensure-system-packages.sh installs it)`);
  await p.start();
  tenant = await p.seedTenant("idt", { ".kiln/workflow.yaml": WORKFLOW }, { member: "dev" });
  await p.startAgent("agent-1", tenant.agentToken);
}, 180_000);
let browser: TestBrowser | null = null;
afterAll(async () => {
  await browser?.close();
  await p.stop();
});

async function trigger(key: string): Promise<{ runId: string; jobId: string }> {
  const r = await p.api(
    "POST",
    `/v1/repos/${tenant.repoId}/workflow-runs`,
    tenant.token,
    { workflow_path: ".kiln/workflow.yaml", commit_sha: tenant.git.headSha },
    { "idempotency-key": key },
  );
  expect(r.status).toBe(202);
  const runView = await p.waitForRun(r.json.run_id, tenant.token, (x) => x.jobs?.length > 0);
  return { runId: r.json.run_id, jobId: runView.jobs[0].id };
}

async function stdout(jobId: string): Promise<string> {
  const r = await fetch(`${p.base}/v1/jobs/${jobId}/logs/raw?stream=stdout`, {
    headers: { authorization: `Bearer ${tenant.token}` },
  });
  return r.status === 200 ? r.text() : "";
}

/** The token the step printed, read from its live log. */
async function tokenOf(jobId: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const m = /^TOKEN (.*)$/m.exec(await stdout(jobId));
    if (m?.[1]) return (JSON.parse(m[1]) as { value: string }).value;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no token in the job log\n${p.logs()}`);
}

async function introspect(token: string, apiToken: string | null): Promise<{ status: number; json: any }> {
  const r = await fetch(`${p.base}/v1/oauth/introspect`, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      ...(apiToken ? { authorization: `Bearer ${apiToken}` } : {}),
    },
    body: new URLSearchParams({ token }).toString(),
  });
  return { status: r.status, json: await r.json() };
}

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString("base64url");
const jwks = () => createRemoteJWKSet(new URL(`${ISSUER}/.well-known/jwks.json`));
const pinned = { issuer: ISSUER, audience: AUD, algorithms: ["ES256"] };

/** jose in its own process, optionally under faketime: "ok" or jose's error code. */
async function verifyElsewhere(token: string, faketime?: string): Promise<string> {
  const script = `import { createRemoteJWKSet, jwtVerify } from "jose";
    try { await jwtVerify(process.argv[1], createRemoteJWKSet(new URL(${JSON.stringify(`${ISSUER}/.well-known/jwks.json`)})),
      { issuer: ${JSON.stringify(ISSUER)}, audience: ${JSON.stringify(AUD)}, algorithms: ["ES256"] });
      console.log("ok", Math.floor(Date.now() / 1000)); } catch (e) { console.log(e.code, Math.floor(Date.now() / 1000)); }`;
  const argv = [process.execPath, "--input-type=module", "-e", script, token];
  const { stdout: out } = faketime
    ? await run("faketime", ["-f", faketime, ...argv], { cwd: ROOT })
    : await run(argv[0] ?? "node", argv.slice(1), { cwd: ROOT });
  return out.trim();
}

describe("Kiln as an OIDC issuer", { timeout: 180_000 }, () => {
  let first = { runId: "", jobId: "" };
  let newestKid = "";
  let token = "";

  it("publishes a discovery document and a JWKS outside the dashboard's CSP and Origin checks", async () => {
    const r = await fetch(`${ISSUER}/.well-known/openid-configuration`, {
      headers: { origin: "https://evil.example" },
    });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-security-policy")).toBeNull();
    const config = await r.json();
    expect(config).toMatchObject({
      issuer: ISSUER,
      jwks_uri: `${ISSUER}/.well-known/jwks.json`,
      id_token_signing_alg_values_supported: ["ES256"],
      subject_types_supported: ["public"],
      response_types_supported: ["id_token"],
    });
    expect(config.claims_supported).toEqual(
      expect.arrayContaining(["sub", "trust_class", "attempt", "workflow_sha256"]),
    );
    const keys = await fetch(config.jwks_uri);
    expect(keys.status).toBe(200);
    expect(Array.isArray((await keys.json()).keys)).toBe(true);
  });

  it("a step gets a token from $KILN_ID_TOKEN_URL that jose verifies against the JWKS", async () => {
    first = await trigger("idt-1");
    token = await tokenOf(first.jobId);
    const { payload, protectedHeader } = await jwtVerify(token, jwks(), pinned);
    expect(protectedHeader).toMatchObject({ alg: "ES256", typ: "JWT" });
    expect(payload).toMatchObject({
      iss: ISSUER,
      aud: AUD,
      sub: "repo:idt/app:ref:refs/heads/main",
      org: "idt",
      repository: "idt/app",
      repository_id: tenant.repoId,
      sha: tenant.git.headSha,
      workflow_path: ".kiln/workflow.yaml",
      run_id: first.runId,
      job_id: first.jobId,
      job_name: "deploy",
      attempt: 1,
      trust_class: "trusted",
      event: "manual",
      isolation: "process",
    });
    expect(payload.workflow_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect((payload.exp ?? 0) - (payload.iat ?? 0)).toBeLessThanOrEqual(60);
    // While the attempt runs, introspection by its own org says active.
    const live = await introspect(token, tenant.token);
    expect(live).toMatchObject({
      status: 200,
      json: { active: true, sub: "repo:idt/app:ref:refs/heads/main", attempt: 1 },
    });
  });

  it("fails after exp (jose under faketime), and in this process for another audience, alg none, HS256 with the public key, an unknown kid", async () => {
    expect(await verifyElsewhere(token)).toMatch(/^ok /);
    const shifted = await verifyElsewhere(token, "+11m");
    expect(shifted).toMatch(/^ERR_JWT_EXPIRED /);
    // The shifted clock really was 11 minutes ahead inside that process.
    expect(Number(shifted.split(" ")[1])).toBeGreaterThan(Math.floor(Date.now() / 1000) + 600);

    await expect(jwtVerify(token, jwks(), { ...pinned, audience: "https://other.example" })).rejects.toMatchObject({
      code: "ERR_JWT_CLAIM_VALIDATION_FAILED",
      claim: "aud",
    });
    const [h, body] = token.split(".") as [string, string, string];
    const kid = decodeProtectedHeader(token).kid ?? "";
    await expect(jwtVerify(`${b64({ alg: "none", kid })}.${body}.`, jwks(), pinned)).rejects.toMatchObject({
      code: "ERR_JOSE_ALG_NOT_ALLOWED",
    });
    // The classic key-confusion forgery: HMAC-SHA256 keyed with the issuer's public key (PEM).
    const pub = (await (await fetch(`${ISSUER}/.well-known/jwks.json`)).json()).keys.find((k: any) => k.kid === kid);
    const pem = createPublicKey({ key: pub, format: "jwk" }).export({ type: "spki", format: "pem" });
    const hsInput = `${b64({ alg: "HS256", typ: "JWT", kid })}.${body}`;
    const hs = `${hsInput}.${createHmac("sha256", pem).update(hsInput).digest("base64url")}`;
    await expect(jwtVerify(hs, jwks(), pinned)).rejects.toMatchObject({ code: "ERR_JOSE_ALG_NOT_ALLOWED" });
    await expect(jwtVerify(hs, jwks(), { ...pinned, algorithms: ["ES256", "HS256"] })).rejects.toThrow();
    const unknown = `${b64({ alg: "ES256", typ: "JWT", kid: "ik-unknown" })}.${body}.${token.split(".")[2]}`;
    await expect(jwtVerify(unknown, jwks(), pinned)).rejects.toMatchObject({ code: "ERR_JWKS_NO_MATCHING_KEY" });
    expect(h).not.toBe("");
  });

  it("introspection is active while the attempt runs, for its own org only, and inactive once it ended", async () => {
    expect(await introspect(token, null)).toMatchObject({ status: 401 });
    const live = await introspect(token, tenant.token);
    expect(live).toMatchObject({
      status: 200,
      json: { active: true, sub: "repo:idt/app:ref:refs/heads/main", attempt: 1 },
    });
    await createOrg(p.db, "idt-other");
    const other = await createApiToken(p.db, { orgSlug: "idt-other", role: "admin" });
    expect((await introspect(token, other.token)).json).toEqual({ active: false });
    const [h, body, s] = token.split(".") as [string, string, string];
    const tampered = `${h}.${b64({ ...JSON.parse(Buffer.from(body, "base64url").toString()), sub: "repo:x/y:ref:z" })}.${s}`;
    expect((await introspect(tampered, tenant.token)).json).toEqual({ active: false });
    expect((await introspect("garbage", tenant.token)).json).toEqual({ active: false });

    const done = await p.waitForRun(first.runId, tenant.token, (x) => x.status === "completed", 90_000);
    expect(done.outcome).toBe("success");
    const out = await stdout(first.jobId);
    // The hostile probes from inside the sandbox: no token, a wrong one, the right one elsewhere.
    expect(out).toContain("NOAUTH 401");
    expect(out).toContain("WRONG 401");
    expect(out).toContain("OTHERPATH 404");
    // The job token never reaches the step.
    expect(out).toContain("JOBTOKEN 0");
    // Revoked at job end, before exp: the token still verifies offline, but not with Kiln.
    expect(await verifyElsewhere(token)).toMatch(/^ok /);
    expect((await introspect(token, tenant.token)).json).toEqual({ active: false });
    expect(await verifyIdToken(p.db, token, { audience: AUD, issuer: ISSUER })).toEqual({
      ok: false,
      reason: "attempt_not_current",
    });
    const minted = JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString()) as { jti: string };
    const audit = await listAuditEvents(p.db, { orgSlug: "idt", kind: "id_token.minted" });
    expect(audit.map((e) => e.subject)).toContain(minted.jti);
  });

  it("after `kiln identity rotate-key` both kids are served until the old one's last token expires", async () => {
    const oldKid = decodeProtectedHeader(token).kid ?? "";
    const cli = (...args: string[]) =>
      run(process.execPath, ["--import", "tsx", "scripts/kiln.ts", ...args, "--json"], {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: p.dbUrl, KILN_IDENTITY_KEK_FILE: KEK_FILE },
      }).then((r) => JSON.parse(r.stdout));
    const rotated = await cli("identity", "rotate-key");
    expect(rotated.retired).toBe(oldKid);
    const served = async () =>
      ((await (await fetch(`${ISSUER}/.well-known/jwks.json`)).json()).keys as { kid: string }[]).map((k) => k.kid);
    expect(await served()).toEqual(expect.arrayContaining([oldKid, rotated.kid]));
    const listed = await cli("identity", "keys");
    expect(listed.map((k: any) => k.kid)).toEqual(expect.arrayContaining([oldKid, rotated.kid]));
    // The web server signs with the new key at once (its cached key fails the mint's check).
    const second = await trigger("idt-2");
    const next = await tokenOf(second.jobId);
    expect(decodeProtectedHeader(next).kid).toBe(rotated.kid);
    await jwtVerify(next, jwks(), pinned);
    // The old token verifies until its exp; then the old kid drops out of the JWKS.
    const untilMs = Date.parse(rotated.retiredVerifyUntil);
    expect(untilMs).toBeLessThanOrEqual(Date.now() + 60_000);
    if (Date.now() < untilMs - 1_000) await jwtVerify(token, jwks(), pinned);
    await new Promise((r) => setTimeout(r, Math.max(0, untilMs - Date.now() + 200)));
    const after = await served();
    expect(after).toContain(rotated.kid);
    expect(after).not.toContain(oldKid);
    await p.waitForRun(second.runId, tenant.token, (x) => x.status === "completed", 90_000);
    newestKid = rotated.kid;
  });

  it("the org settings page shows the issuer and the keys the JWKS serves (Chromium)", async () => {
    browser = await TestBrowser.launch();
    const page = await browser.page();
    await signIn(page, p.base, "dev", "/orgs/idt/settings");
    const card = page.getByTestId("identity-card");
    await card.waitFor();
    expect(await page.getByTestId("issuer").textContent()).toBe(ISSUER);
    expect(await card.locator(`tr[data-kid='${newestKid}']`).textContent()).toContain("signing");
    // A rotation shows the old key as retired, still served, with no other change on the page.
    const again = await run(
      process.execPath,
      ["--import", "tsx", "scripts/kiln.ts", "identity", "rotate-key", "--json"],
      {
        cwd: ROOT,
        env: { ...process.env, DATABASE_URL: p.dbUrl, KILN_IDENTITY_KEK_FILE: KEK_FILE },
      },
    ).then((r) => JSON.parse(r.stdout));
    await page.reload();
    await card.waitFor();
    await page.locator(`tr[data-kid='${again.kid}']`).waitFor();
    expect(await card.locator(`tr[data-kid='${again.kid}']`).textContent()).toContain("signing");
    // The card lists exactly what the JWKS serves; the previous key, if its token is still live, as retired.
    const served = ((await (await fetch(`${ISSUER}/.well-known/jwks.json`)).json()).keys as { kid: string }[]).map(
      (k) => k.kid,
    );
    const listed = await card
      .locator("tr[data-kid]")
      .evaluateAll((rows) => rows.map((r) => r.getAttribute("data-kid")));
    expect(new Set(listed)).toEqual(new Set(served));
    if (served.includes(newestKid))
      expect(await card.locator(`tr[data-kid='${newestKid}']`).textContent()).toContain("retired; in the JWKS until");
    // Keyboard: the discovery link is reachable and points at the issuer's document.
    const discovery = card.getByRole("link", { name: "discovery" });
    await discovery.focus();
    expect(await discovery.getAttribute("href")).toBe(`${ISSUER}/.well-known/openid-configuration`);
  });
  it("an untrusted run (a fork pull request) gets a token only when its repo opted in, and it says so (ADR 0024, issue 28)", async () => {
    await setUntrustedIdTokens(p.db, { fullName: tenant.repoName, enabled: true, actor: "e2e" });
    const body = JSON.stringify({
      action: "opened",
      number: 44,
      pull_request: {
        head: { sha: tenant.git.headSha, ref: "feature", repo: { full_name: "outsider/app" } },
        base: { repo: { full_name: tenant.repoName } },
        user: { login: "outsider" },
      },
      repository: { full_name: tenant.repoName },
      sender: { login: "outsider" },
    });
    const hook = await fetch(`${p.base}/v1/webhooks/github`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-github-event": "pull_request",
        "x-github-delivery": "idt-fork-1",
        "x-hub-signature-256": await sign(tenant.secret, body),
      },
      body,
    });
    expect(hook.status).toBe(202);
    const { run_id: runId } = (await hook.json()) as { run_id: string };
    const runView = await p.waitForRun(runId, tenant.token, (x) => x.jobs?.length > 0);
    const forked = await tokenOf(runView.jobs[0].id);
    const { payload } = await jwtVerify(forked, jwks(), pinned);
    expect(payload).toMatchObject({
      trust_class: "untrusted",
      event: "pull_request",
      repository: "idt/app",
      ref: "refs/pull/44/head",
      // Not the sub a trust policy for the default branch matches (issue 28).
      sub: "repo:idt/app:pull_request",
    });
    const done = await p.waitForRun(runId, tenant.token, (x) => x.status === "completed", 90_000);
    expect(done).toMatchObject({ outcome: "success", trust_class: "untrusted" });
  });
});
