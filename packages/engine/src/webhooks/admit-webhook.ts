import { randomUUID } from "node:crypto";
import { sqlPool, type Db } from "@kiln/db";
import {
  computeTrustClass,
  DomainError,
  pullRequestRef,
  type AdmissionEvent,
  type RetentionWindows,
} from "@kiln/domain";
import { z } from "zod";
import { type ForgeConfig, repoInstallationId } from "../forge/index.ts";
import { cancelPullRequestRuns } from "../runs/index.ts";
import type { OutboxTopic } from "../shared/outbox-topics.ts";
import { hasWellFormedSignature, verifyGithubSignature } from "./verify-signature.ts";

export type WebhookResult =
  | { status: 202; runId: string; duplicate: false }
  | { status: 200; runId: string | null; duplicate: boolean; ignored?: string };

// `id` is the forge's numeric repository id: pinned on the repo and compared on every event (issue 28).
const repoRef = z.object({ full_name: z.string().min(1).max(300), id: z.number().int().positive().optional() });
// GitHub's numeric user id is what identifies the sender: a login can be renamed and re-registered.
const forgeUser = z.object({ login: z.string().max(200), id: z.number().int().positive().optional() });
const pushPayload = z.object({
  ref: z.string().max(1000),
  after: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/),
  deleted: z.boolean().optional(),
  repository: repoRef,
  sender: forgeUser.optional(),
});
const prPayload = z.object({
  action: z.string().max(100),
  // The PR's number: PR close and superseding commits find the PR's runs by it (ADR 0028).
  number: z.number().int().positive().optional(),
  pull_request: z.object({
    head: z.object({
      sha: z.string().regex(/^[0-9a-f]{40}$|^[0-9a-f]{64}$/),
      ref: z.string().max(1000),
      repo: repoRef.nullable(),
    }),
    base: z.object({ repo: repoRef }),
    user: forgeUser.optional(),
  }),
  repository: repoRef,
  sender: forgeUser.optional(),
});
const anyPayload = z.object({
  repository: repoRef,
  // Set when the webhook comes from a GitHub App: the installation whose token writes statuses.
  installation: z.object({ id: z.number().int().positive() }).optional(),
});

interface Planned {
  trigger: "push" | "pull_request";
  commitSha: string;
  ref: string;
  /** A pull request's head branch as the forge named it (the run's ref is refs/pull/<n>/head). */
  headRef: string | null;
  actor: string | null;
  /** The sender's forge user id: the run records the member it belongs to (separation of duties, issue 28). */
  actorId: number | null;
  pullRequest: number | null;
  admission: (isMember: (forgeId: number | null) => Promise<boolean>) => Promise<AdmissionEvent>;
}

/**
 * POST /v1/webhooks/github. Acceptance (delivery row, run, freeze request) is one transaction
 * committed before the 202, and the delivery id is unique: 20 concurrent copies or a redelivery
 * after a crash all resolve to the one run. Nothing is written unless the signature verifies.
 */
export async function admitGithubWebhook(
  db: Db,
  req: {
    rawBody: Uint8Array;
    signature: string | null;
    event: string | null;
    deliveryId: string | null;
    /** The platform's windows, for the metadata stamp of the runs a closed PR cancels. */
    retention?: RetentionWindows;
    /** The forge settings: the App's webhook secret and API, to believe and confirm an installation. */
    forge?: Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs" | "app">;
  },
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
  const sql = sqlPool(db);
  // Plain SQL, two statements (ADR 0015): the repo with the sender's membership, then acceptance
  // as one statement. The sender is peeked at before the payload is validated so that membership
  // comes with the repo lookup; validation still happens only after the signature verifies.
  // Membership is by the forge's user id, never the login (a renamed login is re-registrable).
  const peeked = peekActorId(json);
  const repos = await sql.query<{
    id: string;
    org_id: string;
    full_name: string;
    webhook_secret: string;
    workflow_path: string;
    disconnected: boolean;
    actor_is_member: boolean;
    forge_repository_id: string | null;
    installation_id: string | null;
    installation_confirmed: boolean;
  }>({
    name: "webhook-repo-3",
    // By name up to case (GitHub's matching; names are unique that way, migration 0026).
    text: `SELECT r.id, r.org_id, r.full_name, r.webhook_secret, r.workflow_path, r.disconnected_at IS NOT NULL AS disconnected,
                  r.forge_repository_id::text, f.installation_id::text, f.installation_confirmed_at IS NOT NULL AS installation_confirmed,
                  ($2::bigint IS NOT NULL AND EXISTS (SELECT 1 FROM membership ms JOIN app_user u ON u.id = ms.user_id
                     WHERE ms.org_id = r.org_id AND u.forge_id = $2::bigint AND ms.role IN ('admin', 'member'))) AS actor_is_member
           FROM repo r LEFT JOIN repo_forge f ON f.repo_id = r.id WHERE lower(r.full_name) = lower($1)`,
    values: [base.data.repository.full_name, peeked],
  });
  const repo = repos.rows[0];
  // GitHub signs an App's deliveries with the App's webhook secret, which no tenant knows; a repo's
  // own hook with the secret its org chose. Only the former is evidence of what GitHub says.
  const appSecret = req.forge?.app?.webhookSecret;
  const viaApp = !!repo && !!appSecret && verifyGithubSignature(appSecret, req.rawBody, req.signature);
  // Same answer as a bad signature: an unauthenticated caller learns nothing about which repos exist.
  if (!repo || !(viaApp || verifyGithubSignature(repo.webhook_secret, req.rawBody, req.signature))) {
    throw new DomainError("WEBHOOK.BAD_SIGNATURE", "signature does not match a registered repository's secret");
  }
  if (!req.deliveryId || req.deliveryId.length > 200)
    throw new DomainError("WEBHOOK.BAD_PAYLOAD", "missing X-GitHub-Delivery");
  const deliveryId = req.deliveryId;
  const event = req.event ?? "";

  await checkForgeIdentity(sql, req.forge, repo, viaApp, base.data);
  // A disconnected repo (docs/adr/0029) admits nothing; its deliveries are recorded as ignored so
  // missed-delivery recovery counts them as processed rather than asking for them again.
  const plan = repo.disconnected ? "repo is disconnected" : planEvent(event, json);
  const prior = async () => {
    const rows = await sql.query<{ run_id: string | null }>({
      name: "webhook-prior",
      text: "SELECT run_id FROM webhook_delivery WHERE provider = 'github' AND delivery_id = $1",
      values: [deliveryId],
    });
    return { status: 200 as const, runId: rows.rows[0]?.run_id ?? null, duplicate: true };
  };
  if (typeof plan === "object" && "closed" in plan) {
    // A copy of a close already handled changes nothing (the PR may have been reopened since).
    if (await deliverySeen(sql, deliveryId)) return prior();
    // Cancel first, record after: a crash in between leaves no delivery row, so the forge's
    // redelivery cancels again (a no-op for runs already cancelled) instead of being a duplicate.
    await cancelPullRequestRuns(db, { repoId: repo.id, number: plan.closed, retention: req.retention });
    const rec = await sql.query({
      name: "webhook-pr-closed",
      text: `INSERT INTO webhook_delivery (provider, delivery_id, event, repo_id, outcome) VALUES ('github', $1, $2, $3::uuid, 'pr_closed')
             ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING id`,
      values: [deliveryId, event, repo.id],
    });
    return rec.rowCount === 1
      ? {
          status: 200 as const,
          runId: null,
          duplicate: false,
          ignored: "pull request closed: its unfinished runs were cancelled",
        }
      : prior();
  }
  if (typeof plan === "string") {
    const ignored = await sql.query({
      name: "webhook-ignored",
      text: `INSERT INTO webhook_delivery (provider, delivery_id, event, repo_id, outcome) VALUES ('github', $1, $2, $3::uuid, 'ignored')
             ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING id`,
      values: [deliveryId, event, repo.id],
    });
    return ignored.rowCount === 1 ? { status: 200 as const, runId: null, duplicate: false, ignored: plan } : prior();
  }

  const isMember = async (forgeId: number | null): Promise<boolean> => {
    if (forgeId === null) return false;
    if (forgeId === peeked) return repo.actor_is_member;
    const m = await sql.query({
      name: "webhook-member",
      text: `SELECT 1 FROM membership ms JOIN app_user u ON u.id = ms.user_id WHERE ms.org_id = $1::uuid AND u.forge_id = $2::bigint AND ms.role IN ('admin', 'member')`,
      values: [repo.org_id, forgeId],
    });
    return (m.rowCount ?? 0) > 0;
  };
  const trustClass = computeTrustClass(await plan.admission(isMember));
  // Acceptance is one statement, so one implicit transaction: the delivery row (unique per
  // delivery id: a concurrent copy waits for this one and then inserts nothing), the run, its
  // first event and the freeze request in the outbox, plus the relay's wake-up on commit. The run
  // id is chosen here so the delivery row can name it in the same statement.
  const runId = randomUUID();
  const data = JSON.stringify({ trigger: plan.trigger, delivery: deliveryId, trust_class: trustClass });
  const accepted = await sql.query<{ run_id: string | null }>({
    name: "webhook-accept-4",
    text: `WITH d AS (
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
                  (SELECT count(*) FROM e) AS events, (SELECT count(*) FROM pr) AS prs, (SELECT count(*) FROM fs) AS statuses`,
    values: [
      deliveryId,
      event,
      repo.id,
      runId,
      repo.org_id,
      trustClass,
      plan.trigger,
      plan.actor,
      plan.ref,
      plan.commitSha,
      repo.workflow_path,
      data,
      plan.pullRequest,
      plan.actorId,
      plan.headRef,
      "run.freeze" satisfies OutboxTopic,
      "forge.status" satisfies OutboxTopic,
    ],
  });
  const created = accepted.rows[0]?.run_id;
  return created ? { status: 202 as const, runId: created, duplicate: false as const } : prior();
}

/** The sender's forge user id as the payload states it, unvalidated: only used to look up membership. */
function peekActorId(json: unknown): number | null {
  const o = json as { sender?: { id?: unknown }; pull_request?: { user?: { id?: unknown } } } | null;
  const id = o?.sender?.id ?? o?.pull_request?.user?.id;
  return typeof id === "number" && Number.isSafeInteger(id) && id > 0 ? id : null;
}

/** What an event means: a run to create, or the reason it starts nothing. */
function planEvent(event: string, json: unknown): Planned | { closed: number } | string {
  if (event === "ping") return "ping";
  if (event === "push") {
    const p = pushPayload.safeParse(json);
    if (!p.success)
      throw new DomainError("WEBHOOK.BAD_PAYLOAD", `push payload: ${p.error.issues[0]?.message ?? "invalid"}`);
    if (p.data.deleted || /^0+$/.test(p.data.after)) return "branch deletion starts nothing";
    const actor = p.data.sender?.login ?? null;
    const actorId = p.data.sender?.id ?? null;
    return {
      trigger: "push",
      commitSha: p.data.after,
      ref: p.data.ref,
      headRef: null,
      actor,
      actorId,
      pullRequest: null,
      admission: async (isMember) => ({ kind: "push", senderIsMember: await isMember(actorId) }),
    };
  }
  if (event === "pull_request") {
    const p = prPayload.safeParse(json);
    if (!p.success)
      throw new DomainError("WEBHOOK.BAD_PAYLOAD", `pull_request payload: ${p.error.issues[0]?.message ?? "invalid"}`);
    if (p.data.action === "closed" && p.data.number !== undefined) return { closed: p.data.number };
    if (!["opened", "synchronize", "reopened"].includes(p.data.action))
      return `pull_request action ${p.data.action} starts nothing`;
    const pr = p.data.pull_request;
    const number = p.data.number;
    if (number === undefined) throw new DomainError("WEBHOOK.BAD_PAYLOAD", "pull_request payload: number is required");
    // A head branch named like a ref (`refs/heads/main`) exists only to be mistaken for one (issue 28).
    if (pr.head.ref.startsWith("refs/"))
      throw new DomainError(
        "WEBHOOK.HEAD_REF_REFUSED",
        `pull request head branch ${JSON.stringify(pr.head.ref.slice(0, 100))} starts with refs/: refused`,
      );
    const sender = p.data.sender ?? pr.user ?? null;
    const actor = sender?.login ?? null;
    const actorId = sender?.id ?? null;
    return {
      trigger: "pull_request",
      commitSha: pr.head.sha,
      // The run's ref is the PR's own ref, never the head branch's name (which its author picks): a
      // fork's `main` must not look like the project's main to caches, gates, retention or sub.
      ref: pullRequestRef(number),
      headRef: pr.head.ref,
      actor,
      actorId,
      pullRequest: number,
      admission: async (isMember) => ({
        kind: "pull_request",
        senderIsMember: await isMember(actorId),
        headRepoFullName: pr.head.repo?.full_name ?? null,
        baseRepoFullName: pr.base.repo.full_name,
      }),
    };
  }
  return `event ${event || "(none)"} starts nothing`;
}

/**
 * Forge identity (issue 28, ADR 0028 amended). The forge's repository id is pinned on first sight
 * and must match on every later event. An `installation.id` is believed only from a delivery signed
 * with the App's webhook secret, and bound to the repo only after the App's API confirms that this
 * installation is the one on this repository; a repo-signed delivery naming one is refused, so no
 * tenant can point Kiln's App credential at another tenant's installation.
 */
async function checkForgeIdentity(
  sql: ReturnType<typeof sqlPool>,
  forge: Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs" | "app"> | undefined,
  repo: {
    id: string;
    full_name: string;
    forge_repository_id: string | null;
    installation_id: string | null;
    installation_confirmed: boolean;
  },
  viaApp: boolean,
  payload: { repository: { id?: number | undefined }; installation?: { id: number } | undefined },
): Promise<void> {
  const forgeRepoId = payload.repository.id ?? null;
  if (repo.forge_repository_id !== null && String(forgeRepoId) !== repo.forge_repository_id)
    throw new DomainError(
      "WEBHOOK.REPOSITORY_MISMATCH",
      `repository.id ${forgeRepoId ?? "(none)"} is not the forge repository pinned on ${repo.full_name}`,
    );
  const installationId = payload.installation?.id ?? null;
  if (installationId !== null && !viaApp)
    throw new DomainError(
      "WEBHOOK.INSTALLATION_UNVERIFIED",
      "installation.id is accepted only on deliveries signed with the GitHub App's webhook secret",
    );
  if (repo.forge_repository_id === null && forgeRepoId !== null)
    await sql.query({
      name: "webhook-pin-repo",
      text: "UPDATE repo SET forge_repository_id = $2::bigint WHERE id = $1::uuid AND forge_repository_id IS NULL",
      values: [repo.id, forgeRepoId],
    });
  if (installationId === null) return;
  if (repo.installation_confirmed && repo.installation_id === String(installationId)) return;
  // First sight (or a changed installation): ask the App's API which installation is on this repo.
  const confirmed = forge ? await repoInstallationId(forge, repo.full_name).catch(() => null) : null;
  if (confirmed !== installationId)
    throw new DomainError(
      "WEBHOOK.INSTALLATION_UNVERIFIED",
      `the App's API does not confirm installation ${installationId} on ${repo.full_name}`,
    );
  await sql.query({
    name: "webhook-installation-2",
    text: `INSERT INTO repo_forge (repo_id, installation_id, installation_confirmed_at) VALUES ($1::uuid, $2::bigint, now())
           ON CONFLICT (repo_id) DO UPDATE SET installation_id = EXCLUDED.installation_id,
             installation_confirmed_at = EXCLUDED.installation_confirmed_at, updated_at = now()`,
    values: [repo.id, installationId],
  });
}

async function deliverySeen(sql: ReturnType<typeof sqlPool>, deliveryId: string): Promise<boolean> {
  const r = await sql.query({
    name: "webhook-seen",
    text: "SELECT 1 FROM webhook_delivery WHERE provider = 'github' AND delivery_id = $1",
    values: [deliveryId],
  });
  return (r.rowCount ?? 0) > 0;
}
