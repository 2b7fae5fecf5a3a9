import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import type { SourcePolicy } from "@kiln/oci";
import { recordAuditEvent } from "../audit/index.ts";
import { type ForgeConfig, repoInstallationId } from "../forge/index.ts";
import { newSecret } from "../identity/index.ts";
import { addRepo, orgIdOf } from "./admin.ts";
import { loadForgeCredentialStates, type ForgeCredentialState } from "./forge-credential-state.ts";

// Repositories of an org (issue 19): the dashboard's repositories page, GET /v1/orgs/{org}/repos
// and the CLI's `repo list|remove`. Disconnect is a soft disable (docs/adr/0029).

export interface LastDelivery {
  deliveryId: string;
  event: string;
  /** accepted (a run was admitted), ignored (nothing to run), as webhook_delivery records it. */
  outcome: string;
  runId: string | null;
  receivedAt: string;
}

export interface RepoAdminView {
  id: string;
  fullName: string;
  cloneUrl: string;
  workflowPath: string;
  defaultBranch: string;
  createdAt: string;
  /** Null while connected. */
  disconnectedAt: string | null;
  lastDelivery: LastDelivery | null;
  forgeCredential: ForgeCredentialState;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Connected first, then by name; each with its newest webhook delivery (one index probe per repo). */
export async function listOrgRepos(
  db: Db,
  input: { orgSlug: string; includeDisconnected?: boolean },
): Promise<RepoAdminView[]> {
  const all = input.includeDisconnected ?? true;
  const rows = await db.$queryRaw<
    {
      id: string;
      full_name: string;
      clone_url: string;
      workflow_path: string;
      default_branch: string;
      created_at: Date;
      disconnected_at: Date | null;
      delivery_id: string | null;
      event: string | null;
      outcome: string | null;
      run_id: string | null;
      received_at: Date | null;
    }[]
  >`
    SELECT r.id, r.full_name, r.clone_url, r.workflow_path, r.default_branch, r.created_at, r.disconnected_at,
           d.delivery_id, d.event, d.outcome, d.run_id, d.received_at
    FROM repo r JOIN org o ON o.id = r.org_id
    LEFT JOIN LATERAL (
      SELECT delivery_id, event, outcome, run_id, received_at FROM webhook_delivery w
      WHERE w.repo_id = r.id ORDER BY w.received_at DESC LIMIT 1) d ON true
    WHERE o.slug = ${input.orgSlug} AND (${all} OR r.disconnected_at IS NULL)
    ORDER BY (r.disconnected_at IS NULL) DESC, r.full_name LIMIT 500`;
  const creds = await loadForgeCredentialStates(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => ({
    id: r.id,
    fullName: r.full_name,
    cloneUrl: r.clone_url,
    workflowPath: r.workflow_path,
    defaultBranch: r.default_branch,
    createdAt: r.created_at.toISOString(),
    disconnectedAt: r.disconnected_at?.toISOString() ?? null,
    lastDelivery:
      r.delivery_id && r.received_at
        ? {
            deliveryId: r.delivery_id,
            event: r.event ?? "",
            outcome: r.outcome ?? "",
            runId: r.run_id,
            receivedAt: r.received_at.toISOString(),
          }
        : null,
    forgeCredential: creds.get(r.id) ?? { state: "none" },
  }));
}

/**
 * The dashboard's connect: registers the repo with a generated webhook secret and answers it once
 * (it is stored for signature checks but never listed again). A repo connected already is refused
 * (REPO.ALREADY_CONNECTED) rather than having its secret silently replaced under a working hook; a
 * disconnected one is reconnected under a new secret, its history intact.
 */
export async function connectRepo(
  db: Db,
  input: {
    orgSlug: string;
    name: string;
    cloneUrl: string;
    workflowPath?: string;
    defaultBranch?: string;
    actor: string;
  },
  source: SourcePolicy,
  /** With a GitHub App configured, connecting proves the App is installed on the repo (issue 28). */
  forge?: Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs" | "app">,
): Promise<{ id: string; fullName: string; webhookSecret: string; reconnected: boolean }> {
  // Where the platform runs a GitHub App, a repo is connected only if the App's installation sees
  // it: the forge then vouches for the name, and statuses have a credential. Without an App there is
  // no credential to prove anything with; such a repo gets no statuses until a token is stored, and
  // storing one proves control (setRepoForge). The installation id itself is bound only from a
  // delivery signed with the App's secret.
  if (forge?.app) {
    const seen = await repoInstallationId(forge, input.name).catch((err: unknown) => {
      throw new DomainError(
        "REPO.FORGE_UNVERIFIED",
        `could not ask the forge whether the App is installed on ${input.name}: ${err instanceof Error ? err.message : String(err)}`,
      );
    });
    if (seen === null)
      throw new DomainError(
        "REPO.FORGE_UNVERIFIED",
        `the GitHub App is not installed on ${input.name}: install it on the repository, then connect it`,
      );
  }
  const webhookSecret = newSecret("whsec");
  const r = await addRepo(
    db,
    {
      orgSlug: input.orgSlug,
      name: input.name,
      cloneUrl: input.cloneUrl,
      webhookSecret,
      workflowPath: input.workflowPath ?? ".kiln/workflow.yaml",
      ...(input.defaultBranch ? { defaultBranch: input.defaultBranch } : {}),
      onlyIfNotConnected: true,
      actor: input.actor,
    },
    source,
  );
  return { id: r.id, fullName: r.fullName, webhookSecret, reconnected: r.reconnected };
}

/**
 * Disconnect (docs/adr/0029): new webhooks are recorded as ignored, manual triggers and retries are
 * refused (REPO.DISCONNECTED); runs already admitted finish as they would have (cancel them
 * explicitly if that is wanted); runs, logs, artifacts and the audit trail stay readable.
 * Idempotent: disconnecting a disconnected repo changes and records nothing.
 */
export async function disconnectRepo(
  db: Db,
  input: { orgSlug: string; repo: { id: string } | { fullName: string }; actor: string },
): Promise<{ id: string; fullName: string; disconnectedAt: string; unfinishedRuns: number }> {
  if ("id" in input.repo && !UUID.test(input.repo.id)) throw new DomainError("REPO.NOT_FOUND", "repo not found");
  const orgId = await orgIdOf(db, input.orgSlug).catch(() => {
    throw new DomainError("REPO.NOT_FOUND", "repo not found");
  });
  const id = "id" in input.repo ? input.repo.id : null;
  const fullName = "fullName" in input.repo ? input.repo.fullName : null;
  return withTx(db, "disconnect-repo", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; full_name: string; disconnected_at: Date | null }[]>`
      SELECT id, full_name, disconnected_at FROM repo
      WHERE org_id = ${orgId}::uuid AND (id = ${id}::uuid OR full_name = ${fullName}) FOR UPDATE`;
    const repo = rows[0];
    if (!repo) throw new DomainError("REPO.NOT_FOUND", "repo not found");
    const unfinished = await tx.$queryRaw<{ n: number }[]>`
      SELECT count(*)::int AS n FROM workflow_run WHERE repo_id = ${repo.id}::uuid AND finished_at IS NULL`;
    const unfinishedRuns = unfinished[0]?.n ?? 0;
    if (repo.disconnected_at)
      return {
        id: repo.id,
        fullName: repo.full_name,
        disconnectedAt: repo.disconnected_at.toISOString(),
        unfinishedRuns,
      };
    const upd = await tx.$queryRaw<{ disconnected_at: Date }[]>`
      UPDATE repo SET disconnected_at = now() WHERE id = ${repo.id}::uuid AND disconnected_at IS NULL
      RETURNING disconnected_at`;
    const at = upd[0]?.disconnected_at;
    if (!at) throw new Error("repo disconnect updated nothing under its row lock");
    await recordAuditEvent(tx, {
      orgId,
      kind: "repo.disconnected",
      actor: input.actor,
      subject: repo.full_name,
      data: { repo_id: repo.id, unfinished_runs: unfinishedRuns },
    });
    return { id: repo.id, fullName: repo.full_name, disconnectedAt: at.toISOString(), unfinishedRuns };
  });
}
