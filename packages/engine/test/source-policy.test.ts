// Clone URLs under the source policy (docs/adr/0017), end to end through the engine: registering a
// repo names a refused URL at once (REPO.CLONE_URL_REFUSED with the SOURCE.* rule), and freezing
// re-checks the stored URL before git runs (a row written before the rule, or by hand, is refused
// as the user's failure, never fetched). A real git server on loopback stands for a local forge.
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { isDomainError } from "@kiln/domain";
import type { SourcePolicy } from "@kiln/oci";
import { startGitServer, type TestGitRepo, type TestGitServer } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { admitManualRun, manualTriggerBody } from "../src/runs/admit-manual.ts";
import { freezeRun } from "../src/runs/freeze-run.ts";
import { fetchWorkflowFile } from "../src/source/fetch-workflow.ts";
import { addRepo } from "../src/tenants/admin.ts";
import { runStatus, seedTenant, useTestDb, type Tenant } from "./support.ts";

const t = useTestDb();
const ROOT = path.resolve(import.meta.dirname, "../../..");
let base: string;
let git: TestGitServer;
const OFF: SourcePolicy = { localReposRoot: null };
let LOCAL: SourcePolicy;

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-source-policy-"));
  git = await startGitServer({ rootDir: path.join(base, "git") });
  LOCAL = { localReposRoot: path.join(base, "local") };
});
afterAll(async () => {
  await git?.stop();
  await rm(base, { recursive: true, force: true });
});

async function refusal(p: Promise<unknown>): Promise<{ code: string; reason: unknown; message: string }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isDomainError(err)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return { code: err.code, reason: err.details?.reason, message: err.message };
}

describe("repo add", () => {
  it("refuses each URL outside the policy with REPO.CLONE_URL_REFUSED and the rule, credentials redacted", async () => {
    const tenant = await seedTenant(t.db());
    const add = (cloneUrl: string, source = OFF) =>
      addRepo(
        t.db(),
        {
          orgSlug: tenant.slug,
          name: `${tenant.slug}/other`,
          cloneUrl,
          webhookSecret: "s3cret-value",
          workflowPath: ".kiln/workflow.yaml",
        },
        source,
      );
    const cases: [string, SourcePolicy, string][] = [
      ["file:///srv/git/other-tenant.git", OFF, "SOURCE.LOCAL_NOT_ENABLED"],
      ["file:///srv/git/other-tenant.git", LOCAL, "SOURCE.OUTSIDE_LOCAL_ROOT"],
      ["ssh://git@github.com/acme/app.git", OFF, "SOURCE.SCHEME_NOT_ALLOWED"],
      ["ext::sh", OFF, "SOURCE.SCHEME_NOT_ALLOWED"],
      ["http://127.0.0.1/acme/app.git", OFF, "SOURCE.LOCAL_NOT_ENABLED"],
      ["https://tok:s3cret@169.254.169.254/x.git", OFF, "SOURCE.ADDRESS_NOT_ALLOWED"],
      ["http://tok:s3cret@github.com/acme/app.git", OFF, "SOURCE.SCHEME_NOT_ALLOWED"],
    ];
    for (const [url, source, reason] of cases) {
      const r = await refusal(add(url, source));
      expect(r, url).toMatchObject({ code: "REPO.CLONE_URL_REFUSED", reason });
      expect(r.message, url).not.toContain("s3cret");
    }
    // Issue 28: a credential in the URL is refused (it belongs in the sealed forge token), and the
    // refusal does not repeat it.
    for (const url of [
      "https://x-access-token:s3cret@github.com/acme/app.git",
      "https://s3cret@github.com/acme/app.git",
    ]) {
      const r = await refusal(add(url));
      expect(r, url).toMatchObject({ code: "REPO.CLONE_URL_REFUSED", reason: "SOURCE.CREDENTIALS_IN_URL" });
      expect(r.message, url).not.toContain("s3cret");
    }
    await expect(add("https://github.com/acme/app.git")).resolves.toMatchObject({
      fullName: `${tenant.slug}/other`,
    });
    await expect(add(`file://${base}/local/demo.git`, LOCAL)).resolves.toMatchObject({
      fullName: `${tenant.slug}/other`,
    });
  });
});

describe("kiln repo add (the CLI)", () => {
  /** Runs the CLI against this file's database with exactly the given operator environment. */
  function kiln(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string }> {
    const { KILN_LOCAL_REPOS_ROOT: _drop, ...inherited } = process.env;
    return new Promise((resolve) =>
      execFile(
        process.execPath,
        ["--import", "tsx", "scripts/kiln.ts", ...args],
        { cwd: ROOT, env: { ...inherited, DATABASE_URL: t.url(), ...env } },
        (err, stdout) => resolve({ code: err ? Number(err.code ?? 1) : 0, stdout }),
      ),
    );
  }

  // Four CLI processes (tsx each): slow on a loaded machine.
  it("names the refusal and its rule, without the URL's credentials; local paths only with the operator's root", {
    timeout: 180_000,
  }, async () => {
    const tenant = await seedTenant(t.db());
    const add = (url: string, env?: Record<string, string>) =>
      kiln(
        ["repo", "add", `${tenant.slug}/cli`, "--clone-url", url, "--webhook-secret", "s3cret-value", "--json"],
        env,
      );
    const refused = await add("ssh://tok:s3cret@github.com/acme/app.git");
    expect(refused.code).toBe(1);
    const err = (JSON.parse(refused.stdout) as { error: { code: string; message: string } }).error;
    expect(err.code).toBe("REPO.CLONE_URL_REFUSED");
    expect(err.message).toContain("SOURCE.SCHEME_NOT_ALLOWED");
    expect(refused.stdout).not.toContain("s3cret");
    const withToken = await add("https://x-access-token:s3cret@github.com/acme/app.git");
    expect(withToken.code).toBe(1);
    expect(JSON.parse(withToken.stdout)).toMatchObject({
      error: { code: "REPO.CLONE_URL_REFUSED", message: expect.stringContaining("forge") },
    });
    expect(withToken.stdout).not.toContain("s3cret");
    const local = `file://${base}/local/cli.git`;
    const off = await add(local);
    expect(off.code).toBe(1);
    expect(off.stdout).toContain("SOURCE.LOCAL_NOT_ENABLED");
    const on = await add(local, { KILN_LOCAL_REPOS_ROOT: path.join(base, "local") });
    expect(on.code).toBe(0);
    expect(JSON.parse(on.stdout)).toMatchObject({ fullName: `${tenant.slug}/cli` });
  });
});

describe("freezing re-checks the stored clone URL", () => {
  let tenant: Tenant;
  let repo: TestGitRepo;
  const workflow = "version: 1\njobs:\n  - name: build\n    steps: [echo hi]\n";
  const cacheDir = () => path.join(base, "git-cache");

  beforeAll(async () => {
    tenant = await seedTenant(t.db());
    repo = await git.createRepo(`${tenant.slug}.git`, { ".kiln/workflow.yaml": workflow });
  });

  async function pendingRun(cloneUrl: string): Promise<string> {
    // Admitted from the good URL (a manual trigger checks its commit is on the ref), then pointed
    // at the one under test: the freeze re-checks whatever URL the repo has by then.
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${repo.cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    const caller = { tokenId: tenant.tokenId, orgId: tenant.orgId, role: "member" as const, name: "t" };
    const body = manualTriggerBody.parse({ workflow_path: ".kiln/workflow.yaml", commit_sha: repo.headSha });
    const r = await admitManualRun(t.db(), {
      caller,
      repoId: tenant.repoId,
      idempotencyKey: randomUUID(),
      body,
      source: { gitCacheDir: path.join(base, "git-ref-check"), policy: { localReposRoot: "/" } },
    });
    await t.db().$executeRaw`UPDATE repo SET clone_url = ${cloneUrl} WHERE id = ${tenant.repoId}::uuid`;
    return r.runId;
  }

  it("a loopback forge is refused unless local repositories are enabled, as blocked by policy", async () => {
    const runId = await pendingRun(repo.cloneUrl);
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source: OFF, finalTry: false })).toBe("invalid");
    expect(await runStatus(t.db(), runId)).toMatchObject({
      status: "completed",
      outcome: "blocked_by_policy",
      cause: "source.clone_url_refused",
    });
  });

  it("with local repositories enabled, fetches over a name pinned to its checked address (localhost)", async () => {
    const byName = repo.cloneUrl.replace("127.0.0.1", "localhost");
    expect(byName).toContain("//localhost:");
    const runId = await pendingRun(byName);
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source: LOCAL, finalTry: false })).toBe("frozen");
  });

  it("refuses a file:// URL outside the root and shows no credentials in any cause", async () => {
    const runId = await pendingRun(`file://${path.join(base, "git")}/${tenant.slug}.git`);
    expect(await freezeRun(t.db(), { runId, gitCacheDir: cacheDir(), source: LOCAL, finalTry: false })).toBe("invalid");
    const rows = await t.db().$queryRaw<{ cause: string; cause_message: string }[]>`
      SELECT cause, cause_message FROM workflow_run WHERE id = ${runId}::uuid`;
    expect(rows[0]).toMatchObject({ cause: "source.clone_url_refused" });
    expect(rows[0]!.cause_message).toContain("outside the local repository root");

    const withToken = `http://tok:s3cret@127.0.0.1:1/${tenant.slug}.git`;
    const down = await fetchWorkflowFile({
      cacheDir: cacheDir(),
      repoId: randomUUID(),
      cloneUrl: withToken,
      commitSha: repo.headSha,
      filePath: ".kiln/workflow.yaml",
      source: LOCAL,
    });
    expect(down).toMatchObject({ ok: false, kind: "unreachable" });
    expect(JSON.stringify(down)).not.toContain("s3cret");
    const refused = await fetchWorkflowFile({
      cacheDir: cacheDir(),
      repoId: randomUUID(),
      cloneUrl: withToken,
      commitSha: repo.headSha,
      filePath: ".kiln/workflow.yaml",
      source: OFF,
    });
    expect(refused).toMatchObject({ ok: false, kind: "refused", code: "SOURCE.LOCAL_NOT_ENABLED" });
    expect(JSON.stringify(refused)).not.toContain("s3cret");
  });
});
