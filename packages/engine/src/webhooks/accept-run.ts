import { randomUUID } from "node:crypto";
import { computeTrustClass, githubAdmission, type GithubRunRequest } from "@kiln/domain";
import type { OutboxTopic } from "../shared/outbox-topics.ts";
import type { SqlPool } from "../shared/sql-pool.ts";
import { priorDelivery, type Delivery, type WebhookResult } from "./webhook-deliveries.ts";
import type { WebhookRepo } from "./webhook-repo.ts";

// Acceptance is one statement, so one implicit transaction: the delivery row (unique per
// delivery id: a concurrent copy waits for this one and then inserts nothing), the run, its
// first event and the freeze request in the outbox, plus the relay's wake-up on commit. The run
// id is chosen here so the delivery row can name it in the same statement.
const ACCEPT_SQL = `WITH d AS (
             INSERT INTO webhook_delivery (provider, delivery_id, event, repo_id, outcome, run_id)
             VALUES ('github', $1, $2, $3::uuid, 'accepted', $4::uuid)
             ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING id),
           r AS (
             INSERT INTO workflow_run (id, org_id, repo_id, status, trust_class, trigger, actor, actor_user_id, ref, head_ref, commit_sha, workflow_path, inputs)
             SELECT $4::uuid, $5::uuid, $3::uuid, 'pending', $6, $7, $8,
                    (SELECT u.id FROM app_user u JOIN membership ms ON ms.user_id = u.id
                     WHERE ms.org_id = $5::uuid AND u.forge_id = $14::bigint AND ms.role IN ('admin', 'member')),
                    $9, $15, $10, $11, '{}'::jsonb FROM d
             RETURNING id),
           e AS (
             INSERT INTO transition_event (org_id, run_id, entity, from_state, to_state, reason, data)
             SELECT $5::uuid, r.id, 'run', NULL, 'pending', 'accepted', $12::jsonb FROM r
             RETURNING id),
           o AS (
             INSERT INTO outbox (topic, payload, dedupe_key)
             SELECT $16::text, jsonb_build_object('runId', r.id), r.id::text FROM r
             RETURNING id),
           pr AS (
             INSERT INTO run_pull_request (run_id, repo_id, number) SELECT r.id, $3::uuid, $13::int FROM r WHERE $13::int IS NOT NULL
             RETURNING run_id),
           -- The pending status (ADR 0028), only for repos with a forge credential.
           fs AS (
             INSERT INTO outbox (topic, payload, dedupe_key)
             SELECT $17::text, jsonb_build_object('runId', r.id), r.id::text FROM r
             WHERE EXISTS (SELECT 1 FROM repo_forge f WHERE f.repo_id = $3::uuid AND (f.token_enc IS NOT NULL OR f.installation_id IS NOT NULL))
             RETURNING id)
           SELECT (SELECT id FROM r) AS run_id, (SELECT pg_notify('kiln_outbox', $16::text) FROM o) AS notified,
                  (SELECT count(*) FROM e) AS events, (SELECT count(*) FROM pr) AS prs, (SELECT count(*) FROM fs) AS statuses`;

/** A delivery that asks for a run: its trust class from the sender's membership, then acceptance. */
export async function acceptRun(
  sql: SqlPool,
  repo: WebhookRepo,
  delivery: Delivery,
  run: GithubRunRequest,
  peekedActorId: number | null,
): Promise<WebhookResult> {
  const isMember = await senderIsMember(sql, repo, run.actorId, peekedActorId);
  const trustClass = computeTrustClass(githubAdmission(run, isMember));
  const runId = randomUUID();
  const data = JSON.stringify({ trigger: run.trigger, delivery: delivery.id, trust_class: trustClass });
  const accepted = await sql.query<{ run_id: string | null }>({
    name: "webhook-accept-4",
    text: ACCEPT_SQL,
    values: [
      delivery.id,
      delivery.event,
      repo.id,
      runId,
      repo.org_id,
      trustClass,
      run.trigger,
      run.actor,
      run.ref,
      run.commitSha,
      repo.workflow_path,
      data,
      run.pullRequest,
      run.actorId,
      run.headRef,
      "run.freeze" satisfies OutboxTopic,
      "forge.status" satisfies OutboxTopic,
    ],
  });
  const created = accepted.rows[0]?.run_id;
  return created
    ? { status: 202 as const, runId: created, duplicate: false as const }
    : priorDelivery(sql, delivery.id);
}

/** Membership by the forge's user id; the repo lookup already answered it for the peeked sender. */
async function senderIsMember(
  sql: SqlPool,
  repo: WebhookRepo,
  forgeId: number | null,
  peekedActorId: number | null,
): Promise<boolean> {
  if (forgeId === null) return false;
  if (forgeId === peekedActorId) return repo.actor_is_member;
  const m = await sql.query({
    name: "webhook-member",
    text: `SELECT 1 FROM membership ms JOIN app_user u ON u.id = ms.user_id WHERE ms.org_id = $1::uuid AND u.forge_id = $2::bigint AND ms.role IN ('admin', 'member')`,
    values: [repo.org_id, forgeId],
  });
  return (m.rowCount ?? 0) > 0;
}
