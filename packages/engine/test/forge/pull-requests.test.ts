import { randomUUID } from "node:crypto";
import { withTx } from "@kiln/db";
import { sign } from "@octokit/webhooks-methods";
import { describe, expect, it } from "vitest";
import { cancelSupersededRuns } from "../../src/runs/cancel-pull-request-runs.ts";
import { createJobs } from "../../src/runs/freeze-run.ts";
import { admitGithubWebhook } from "../../src/webhooks/admit-webhook.ts";
import { def, runStatus, seedTenant, useTestDb, type Tenant } from "../support.ts";
import { prPayload } from "./support.ts";

const t = useTestDb();
const MEMBER = 777_001;

async function pr(tenant: Tenant, action: string, number: number, sha: string, deliveryId = randomUUID()) {
  const body = JSON.stringify(prPayload(tenant.repoName, action, number, sha, MEMBER));
  return admitGithubWebhook(t.db(), {
    rawBody: Buffer.from(body),
    signature: await sign("s3cret-value", body),
    event: "pull_request",
    deliveryId,
  });
}

/** What the freeze does to a pending run (without git): definition stored, jobs created. */
async function freeze(tenant: Tenant, runId: string, yaml: string): Promise<void> {
  const d = def(yaml);
  await withTx(t.db(), "test-freeze", async (tx) => {
    await tx.$executeRaw`UPDATE workflow_run SET status = 'running', definition = ${JSON.stringify(d)}::jsonb WHERE id = ${runId}::uuid`;
    await createJobs(tx, { id: runId, orgId: tenant.orgId }, d, tenant.pool);
  });
}

const SUPERSEDING =
  "version: 1\npull_request: {cancel_superseded: true}\njobs:\n  - name: test\n    steps: [sleep 60]\n";
const PLAIN = "version: 1\njobs:\n  - name: test\n    steps: [sleep 60]\n";

describe("pull requests", () => {
  it("closed cancels that PR's unfinished runs and no other PR's; a copy of the close changes nothing", async () => {
    const tenant = await seedTenant(t.db(), { member: "dev", forgeId: MEMBER });
    const a = await pr(tenant, "opened", 7, "1".repeat(40));
    const b = await pr(tenant, "synchronize", 7, "2".repeat(40));
    const other = await pr(tenant, "opened", 8, "3".repeat(40));
    await freeze(tenant, b.runId ?? "", PLAIN);
    const closeId = randomUUID();
    const closed = await pr(tenant, "closed", 7, "2".repeat(40), closeId);
    expect(closed).toMatchObject({ status: 200, runId: null, duplicate: false });
    expect(await runStatus(t.db(), a.runId ?? "")).toMatchObject({ status: "completed", outcome: "cancelled" });
    expect(await runStatus(t.db(), b.runId ?? "")).toMatchObject({ status: "completed", outcome: "cancelled" });
    expect(await runStatus(t.db(), other.runId ?? "")).toMatchObject({ status: "pending", outcome: null });

    // Reopened with a new run; the old close redelivered must not cancel it.
    const reopened = await pr(tenant, "reopened", 7, "2".repeat(40));
    expect(await pr(tenant, "closed", 7, "2".repeat(40), closeId)).toMatchObject({ duplicate: true });
    expect(await runStatus(t.db(), reopened.runId ?? "")).toMatchObject({ status: "pending" });
  });

  it("cancel_superseded: the newer commit's frozen run cancels the PR's older unfinished runs, never a newer one", async () => {
    const tenant = await seedTenant(t.db(), { member: "dev", forgeId: MEMBER });
    const first = await pr(tenant, "opened", 9, "4".repeat(40));
    const second = await pr(tenant, "synchronize", 9, "5".repeat(40));
    const third = await pr(tenant, "synchronize", 9, "6".repeat(40));
    await freeze(tenant, first.runId ?? "", SUPERSEDING);
    await freeze(tenant, second.runId ?? "", SUPERSEDING);
    // The middle run freezes: it cancels the first, not the third (newer) one.
    expect(await cancelSupersededRuns(t.db(), second.runId ?? "")).toEqual([first.runId]);
    expect(await runStatus(t.db(), first.runId ?? "")).toMatchObject({ status: "completed", outcome: "cancelled" });
    expect(await runStatus(t.db(), third.runId ?? "")).toMatchObject({ status: "pending" });
    // Run twice: nothing left to cancel.
    expect(await cancelSupersededRuns(t.db(), second.runId ?? "")).toEqual([]);
    const cause = await t.db().$queryRaw<{ data: { actor: string } }[]>`
      SELECT data FROM transition_event WHERE run_id = ${first.runId}::uuid AND reason = 'cancel_requested'`;
    expect(cause[0]?.data.actor).toContain("superseded by a newer commit on pull request #9");
  });

  it("without the option, a newer commit leaves older runs alone", async () => {
    const tenant = await seedTenant(t.db(), { member: "dev", forgeId: MEMBER });
    const first = await pr(tenant, "opened", 10, "7".repeat(40));
    const second = await pr(tenant, "synchronize", 10, "8".repeat(40));
    await freeze(tenant, second.runId ?? "", PLAIN);
    expect(await cancelSupersededRuns(t.db(), second.runId ?? "")).toEqual([]);
    expect(await runStatus(t.db(), first.runId ?? "")).toMatchObject({ status: "pending" });
  });
});
