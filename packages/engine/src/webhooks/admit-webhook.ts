import { withTx, type Db } from "@kiln/db";
import { computeTrustClass, DomainError, type AdmissionEvent } from "@kiln/domain";
import { z } from "zod";
import { enqueueOutbox, recordTransition } from "../shared/journal.ts";
import { hasWellFormedSignature, verifyGithubSignature } from "./verify-signature.ts";

export type WebhookResult =
  | { status: 202; runId: string; duplicate: false }
  | { status: 200; runId: string | null; duplicate: boolean; ignored?: string };

const repoRef = z.object({ full_name: z.string().min(1).max(300) });
const pushPayload = z.object({
  ref: z.string().max(1000),
  after: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/),
  deleted: z.boolean().optional(),
  repository: repoRef,
  sender: z.object({ login: z.string().max(200) }).optional(),
});
const prPayload = z.object({
  action: z.string().max(100),
  pull_request: z.object({
    head: z.object({ sha: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/), ref: z.string().max(1000), repo: repoRef.nullable() }),
    base: z.object({ repo: repoRef }),
    user: z.object({ login: z.string().max(200) }).optional(),
  }),
  repository: repoRef,
  sender: z.object({ login: z.string().max(200) }).optional(),
});
const anyPayload = z.object({ repository: repoRef });

interface Planned {
  trigger: "push" | "pull_request";
  commitSha: string;
  ref: string;
  actor: string | null;
  admission: (isMember: (login: string | null) => Promise<boolean>) => Promise<AdmissionEvent>;
}

/**
 * POST /v1/webhooks/github. Acceptance (delivery row, run, freeze request) is one transaction
 * committed before the 202, and the delivery id is unique: 20 concurrent copies or a redelivery
 * after a crash all resolve to the one run. Nothing is written unless the signature verifies.
 */
export async function admitGithubWebhook(
  db: Db,
  req: { rawBody: Uint8Array; signature: string | null; event: string | null; deliveryId: string | null },
): Promise<WebhookResult> {
  if (!hasWellFormedSignature(req.signature)) {
    throw new DomainError("WEBHOOK.BAD_SIGNATURE", "missing or malformed X-Hub-Signature-256 (sha256 is required)");
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(req.rawBody).toString("utf8"));
  } catch {
    throw new DomainError("WEBHOOK.BAD_PAYLOAD", "body is not JSON");
  }
  const base = anyPayload.safeParse(json);
  if (!base.success) throw new DomainError("WEBHOOK.BAD_PAYLOAD", "payload has no repository.full_name");
  const repos = await db.$queryRaw<{ id: string; org_id: string; webhook_secret: string; workflow_path: string }[]>`
    SELECT id, org_id, webhook_secret, workflow_path FROM repo WHERE full_name = ${base.data.repository.full_name}`;
  const repo = repos[0];
  // Same answer as a bad signature: an unauthenticated caller learns nothing about which repos exist.
  if (!repo || !verifyGithubSignature(repo.webhook_secret, req.rawBody, req.signature)) {
    throw new DomainError("WEBHOOK.BAD_SIGNATURE", "signature does not match a registered repository's secret");
  }
  if (!req.deliveryId || req.deliveryId.length > 200) throw new DomainError("WEBHOOK.BAD_PAYLOAD", "missing X-GitHub-Delivery");
  const event = req.event ?? "";

  const plan = planEvent(event, json);
  return withTx(db, "admit-webhook", async (tx) => {
    const inserted = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO webhook_delivery (provider, delivery_id, event, repo_id, outcome)
      VALUES ('github', ${req.deliveryId}, ${event}, ${repo.id}::uuid, ${typeof plan === "string" ? "ignored" : "accepted"})
      ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING id`;
    const delivery = inserted[0];
    if (!delivery) {
      const prior = await tx.$queryRaw<{ run_id: string | null }[]>`
        SELECT run_id FROM webhook_delivery WHERE provider = 'github' AND delivery_id = ${req.deliveryId}`;
      return { status: 200 as const, runId: prior[0]?.run_id ?? null, duplicate: true };
    }
    if (typeof plan === "string") return { status: 200 as const, runId: null, duplicate: false, ignored: plan };

    const isMember = async (login: string | null) => {
      if (!login) return false;
      const m = await tx.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM membership ms JOIN app_user u ON u.id = ms.user_id
        WHERE ms.org_id = ${repo.org_id}::uuid AND u.login = ${login} AND ms.role IN ('admin', 'member')`;
      return (m[0]?.n ?? 0n) > 0n;
    };
    const trustClass = computeTrustClass(await plan.admission(isMember));
    const runs = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO workflow_run (org_id, repo_id, status, trust_class, trigger, actor, ref, commit_sha, workflow_path, inputs)
      VALUES (${repo.org_id}::uuid, ${repo.id}::uuid, 'pending', ${trustClass}, ${plan.trigger}, ${plan.actor}, ${plan.ref},
              ${plan.commitSha}, ${repo.workflow_path}, '{}'::jsonb)
      RETURNING id`;
    const runId = runs[0]?.id;
    if (!runId) throw new Error("run insert returned nothing");
    await tx.$executeRaw`UPDATE webhook_delivery SET run_id = ${runId}::uuid WHERE id = ${delivery.id}::uuid`;
    await recordTransition(tx, { orgId: repo.org_id, runId, entity: "run", from: null, to: "pending", reason: "accepted", data: { trigger: plan.trigger, delivery: req.deliveryId, trust_class: trustClass } });
    await enqueueOutbox(tx, "run.freeze", { runId }, { dedupeKey: runId });
    return { status: 202 as const, runId, duplicate: false as const };
  });
}

/** What an event means: a run to create, or the reason it starts nothing. */
function planEvent(event: string, json: unknown): Planned | string {
  if (event === "ping") return "ping";
  if (event === "push") {
    const p = pushPayload.safeParse(json);
    if (!p.success) throw new DomainError("WEBHOOK.BAD_PAYLOAD", `push payload: ${p.error.issues[0]?.message ?? "invalid"}`);
    if (p.data.deleted || /^0+$/.test(p.data.after)) return "branch deletion starts nothing";
    const actor = p.data.sender?.login ?? null;
    return {
      trigger: "push", commitSha: p.data.after, ref: p.data.ref, actor,
      admission: async (isMember) => ({ kind: "push", senderIsMember: await isMember(actor) }),
    };
  }
  if (event === "pull_request") {
    const p = prPayload.safeParse(json);
    if (!p.success) throw new DomainError("WEBHOOK.BAD_PAYLOAD", `pull_request payload: ${p.error.issues[0]?.message ?? "invalid"}`);
    if (!["opened", "synchronize", "reopened"].includes(p.data.action)) return `pull_request action ${p.data.action} starts nothing`;
    const pr = p.data.pull_request;
    const actor = p.data.sender?.login ?? pr.user?.login ?? null;
    return {
      trigger: "pull_request", commitSha: pr.head.sha, ref: pr.head.ref, actor,
      admission: async (isMember) => ({
        kind: "pull_request", senderIsMember: await isMember(actor),
        headRepoFullName: pr.head.repo?.full_name ?? null, baseRepoFullName: pr.base.repo.full_name,
      }),
    };
  }
  return `event ${event || "(none)"} starts nothing`;
}
