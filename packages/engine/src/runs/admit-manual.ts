import { createHash } from "node:crypto";
import { withTx, type Db } from "@kiln/db";
import { branchRef, canTrigger, computeTrustClass, DomainError, fullRef, type Role } from "@kiln/domain";
import { z } from "zod";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";
import { checkCommitOnRef, type RefCheckSource } from "./commit-on-ref.ts";

export const manualTriggerBody = z
  .object({
    workflow_path: z
      .string()
      .min(1)
      .max(500)
      .refine(
        (p) => !p.startsWith("/") && !p.split("/").includes("..") && !p.includes("\0"),
        "must be a relative path inside the repository",
      ),
    commit_sha: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/, "must be a full hex commit SHA"),
    /**
     * The branch (`main`, `refs/heads/main`) or tag (`refs/tags/v1`) the commit must be reachable
     * from; it names the trusted cache namespace the run writes. Default: the repo's default branch.
     */
    ref: z
      .string()
      .min(1)
      .max(250)
      .refine((r) => fullRef(r) !== null, "must be a branch name or refs/heads/... or refs/tags/...")
      .optional(),
    inputs: z
      .record(z.string().max(100), z.union([z.string().max(10_000), z.number(), z.boolean()]))
      .refine((o) => Object.keys(o).length <= 100, "at most 100 inputs")
      .default({}),
  })
  .strict();
export type ManualTriggerBody = z.infer<typeof manualTriggerBody>;

export interface Caller {
  tokenId: string;
  orgId: string;
  role: Role;
  name: string;
  /** A personal token's member (issue 18): approvals and promotion requests are theirs, and the runs
   * it triggers record them (actor_user_id, issue 28: separation of duties by person). */
  userId?: string;
  login?: string;
}

// An in-flight key older than this belongs to a request that died between its two transactions;
// a retry may take it over rather than being told 409 forever.
const IN_FLIGHT_TAKEOVER_SECONDS = 60;

function digestOf(body: ManualTriggerBody): string {
  const canonical = JSON.stringify({
    workflow_path: body.workflow_path,
    commit_sha: body.commit_sha,
    ref: body.ref ?? null,
    inputs: Object.fromEntries(Object.entries(body.inputs).sort(([a], [b]) => a.localeCompare(b))),
  });
  return createHash("sha256").update(canonical).digest("hex");
}

/**
 * POST /v1/repos/{repo_id}/workflow-runs. The idempotency key is scoped to (caller, repo) and bound
 * to a digest of the request. It is claimed in its own committed transaction first, so a concurrent
 * duplicate sees "in flight" (409) rather than waiting; the run and the key's completion then
 * commit together.
 */
export async function admitManualRun(
  db: Db,
  input: {
    caller: Caller;
    repoId: string;
    idempotencyKey: string | null;
    body: ManualTriggerBody;
    /** Where the ref check fetches from (the commit must be reachable from the ref). */
    source: RefCheckSource;
  },
): Promise<{ status: 202; runId: string; replayed: boolean }> {
  const { caller } = input;
  if (!canTrigger(caller.role)) throw new DomainError("AUTH.FORBIDDEN", `role ${caller.role} cannot start runs`);
  const key = input.idempotencyKey;
  if (!key || key.length > 255)
    throw new DomainError("IDEMPOTENCY.KEY_REQUIRED", "an Idempotency-Key header (1-255 chars) is required");
  const repos = await db.$queryRaw<{ id: string; clone_url: string; default_branch: string; disconnected: boolean }[]>`
    SELECT id, clone_url, default_branch, disconnected_at IS NOT NULL AS disconnected
    FROM repo WHERE id = ${input.repoId}::uuid AND org_id = ${caller.orgId}::uuid`;
  const repo = repos[0];
  if (!repo) throw new DomainError("REPO.NOT_FOUND", "repository not found");
  if (repo.disconnected)
    throw new DomainError("REPO.DISCONNECTED", "this repository is disconnected; connect it again to start runs");
  const ref = input.body.ref === undefined ? branchRef(repo.default_branch) : fullRef(input.body.ref);
  if (ref === null)
    throw new DomainError("REQUEST.INVALID", "ref must be a branch name or refs/heads/... or refs/tags/...");
  const digest = digestOf(input.body);

  const claim = await withTx(db, "idempotency-claim", async (tx) => {
    const ins = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO idempotency_key (caller_id, repo_id, key, request_digest, state)
      VALUES (${caller.tokenId}::uuid, ${input.repoId}::uuid, ${key}, ${digest}, 'in_flight')
      ON CONFLICT (caller_id, repo_id, key) DO NOTHING RETURNING id`;
    if (ins[0]) return { kind: "fresh" as const, id: ins[0].id };
    const rows = await tx.$queryRaw<
      { id: string; request_digest: string; state: string; run_id: string | null; stale: boolean }[]
    >`
      SELECT id, request_digest, state, run_id, updated_at < now() - make_interval(secs => ${IN_FLIGHT_TAKEOVER_SECONDS}) AS stale
      FROM idempotency_key WHERE caller_id = ${caller.tokenId}::uuid AND repo_id = ${input.repoId}::uuid AND key = ${key} FOR UPDATE`;
    const row = rows[0];
    if (!row) throw new Error("idempotency row vanished");
    if (row.request_digest !== digest) {
      throw new DomainError("IDEMPOTENCY.KEY_REUSED", "this Idempotency-Key was used with a different request body");
    }
    if (row.state === "done" && row.run_id) return { kind: "replay" as const, runId: row.run_id };
    if (!row.stale)
      throw new DomainError("IDEMPOTENCY.IN_FLIGHT", "a request with this Idempotency-Key is still in flight");
    await tx.$executeRaw`UPDATE idempotency_key SET updated_at = now() WHERE id = ${row.id}::uuid`;
    return { kind: "fresh" as const, id: row.id };
  });
  if (claim.kind === "replay") return { status: 202, runId: claim.runId, replayed: true };
  // Checked once the key is ours (a replay answers without asking git again); a refusal releases
  // the key so a corrected retry under it is not told "in flight".
  try {
    await checkCommitOnRef(input.source, { id: repo.id, cloneUrl: repo.clone_url }, ref, input.body.commit_sha);
  } catch (e) {
    await db.$executeRaw`DELETE FROM idempotency_key WHERE id = ${claim.id}::uuid AND state = 'in_flight'`;
    throw e;
  }

  const runId = await withTx(db, "admit-manual", async (tx) => {
    const trustClass = computeTrustClass({ kind: "manual", callerRole: caller.role });
    const runs = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, actor, actor_user_id, ref, commit_sha, workflow_path, inputs)
      VALUES (${caller.orgId}::uuid, ${input.repoId}::uuid, 'pending', ${trustClass}, 'manual', ${caller.name},
              ${caller.userId ?? null}::uuid, ${ref},
              ${input.body.commit_sha}, ${input.body.workflow_path}, ${JSON.stringify(input.body.inputs)}::jsonb)
      RETURNING id`;
    const id = runs[0]?.id;
    if (!id) throw new Error("run insert returned nothing");
    const n = await tx.$executeRaw`
      UPDATE idempotency_key SET state = 'done', run_id = ${id}::uuid, updated_at = now() WHERE id = ${claim.id}::uuid AND state = 'in_flight'`;
    // Another request took over a stale key in between: let that one own the key (roll back ours).
    if (n !== 1)
      throw new DomainError("IDEMPOTENCY.IN_FLIGHT", "a request with this Idempotency-Key is still in flight");
    await recordTransition(tx, {
      orgId: caller.orgId,
      runId: id,
      entity: "run",
      from: null,
      to: "pending",
      reason: "accepted",
      data: { trigger: "manual", trust_class: trustClass },
    });
    await enqueueOutbox(tx, "run.freeze", { runId: id }, { dedupeKey: id });
    return id;
  });
  return { status: 202, runId, replayed: false };
}
