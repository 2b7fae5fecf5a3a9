// A GitHub webhook delivery's payload as a typed forge event (issue 29): pure parsing and the
// decision what the event means. The engine verifies the signature, looks the repo up and
// persists; nothing here does I/O.
import { z } from "zod";
import { pullRequestRef } from "../runs/index.ts";
import { DomainError } from "../shared/errors.ts";
import type { AdmissionEvent } from "../tenants/index.ts";

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

/** What every delivery must carry: the repository, and the App installation when an App sent it. */
export type GithubDeliveryEnvelope = z.infer<typeof anyPayload>;

/** A run the event asks for, with the facts its trust class is computed from. */
export interface GithubRunRequest {
  trigger: "push" | "pull_request";
  commitSha: string;
  ref: string;
  /** A pull request's head branch as the forge named it (the run's ref is refs/pull/<n>/head). */
  headRef: string | null;
  actor: string | null;
  /** The sender's forge user id: the run records the member it belongs to (separation of duties, issue 28). */
  actorId: number | null;
  pullRequest: number | null;
  /** A pull request's head and base repositories (the admission's fork check); null for a push. */
  repos: { head: string | null; base: string } | null;
}

/** What an event means: a run to create, a pull request closed, or the reason it starts nothing. */
export type GithubEvent =
  | { kind: "run"; run: GithubRunRequest }
  | { kind: "pr_closed"; number: number }
  | { kind: "ignored"; reason: string };

/** The envelope of a parsed JSON payload; WEBHOOK.BAD_PAYLOAD without a repository. */
export function parseGithubEnvelope(json: unknown): GithubDeliveryEnvelope {
  const base = anyPayload.safeParse(json);
  if (!base.success) throw new DomainError("WEBHOOK.BAD_PAYLOAD", "payload has no repository.full_name");
  return base.data;
}

/** The sender's forge user id as the payload states it, unvalidated: only used to look up membership. */
export function peekGithubActorId(json: unknown): number | null {
  const o = json as { sender?: { id?: unknown }; pull_request?: { user?: { id?: unknown } } } | null;
  const id = o?.sender?.id ?? o?.pull_request?.user?.id;
  return typeof id === "number" && Number.isSafeInteger(id) && id > 0 ? id : null;
}

/** The event named by X-GitHub-Event, parsed from its payload (call only once the signature verified). */
export function parseGithubEvent(event: string, json: unknown): GithubEvent {
  if (event === "ping") return { kind: "ignored", reason: "ping" };
  if (event === "push") return parsePush(json);
  if (event === "pull_request") return parsePullRequest(json);
  return { kind: "ignored", reason: `event ${event || "(none)"} starts nothing` };
}

/** The admission event the trust class is computed from, once the sender's membership is known. */
export function githubAdmission(run: GithubRunRequest, senderIsMember: boolean): AdmissionEvent {
  return run.repos
    ? { kind: "pull_request", senderIsMember, headRepoFullName: run.repos.head, baseRepoFullName: run.repos.base }
    : { kind: "push", senderIsMember };
}

function parsePush(json: unknown): GithubEvent {
  const p = pushPayload.safeParse(json);
  if (!p.success)
    throw new DomainError("WEBHOOK.BAD_PAYLOAD", `push payload: ${p.error.issues[0]?.message ?? "invalid"}`);
  if (p.data.deleted || /^0+$/.test(p.data.after)) return { kind: "ignored", reason: "branch deletion starts nothing" };
  const run: GithubRunRequest = {
    trigger: "push",
    commitSha: p.data.after,
    ref: p.data.ref,
    headRef: null,
    actor: p.data.sender?.login ?? null,
    actorId: p.data.sender?.id ?? null,
    pullRequest: null,
    repos: null,
  };
  return { kind: "run", run };
}

function parsePullRequest(json: unknown): GithubEvent {
  const p = prPayload.safeParse(json);
  if (!p.success)
    throw new DomainError("WEBHOOK.BAD_PAYLOAD", `pull_request payload: ${p.error.issues[0]?.message ?? "invalid"}`);
  if (p.data.action === "closed" && p.data.number !== undefined) return { kind: "pr_closed", number: p.data.number };
  if (!["opened", "synchronize", "reopened"].includes(p.data.action))
    return { kind: "ignored", reason: `pull_request action ${p.data.action} starts nothing` };
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
  const run: GithubRunRequest = {
    trigger: "pull_request",
    commitSha: pr.head.sha,
    // The run's ref is the PR's own ref, never the head branch's name (which its author picks): a
    // fork's `main` must not look like the project's main to caches, gates, retention or sub.
    ref: pullRequestRef(number),
    headRef: pr.head.ref,
    actor: sender?.login ?? null,
    actorId: sender?.id ?? null,
    pullRequest: number,
    repos: { head: pr.head.repo?.full_name ?? null, base: pr.base.repo.full_name },
  };
  return { kind: "run", run };
}
