import { describe, expect, it } from "vitest";
import { DomainError } from "../shared/errors.ts";
import { computeTrustClass } from "../tenants/index.ts";
import {
  githubAdmission,
  parseGithubEnvelope,
  parseGithubEvent,
  peekGithubActorId,
  type GithubRunRequest,
} from "./github-event.ts";

const sha = "a".repeat(40);
const repository = { full_name: "acme/app", id: 7 };

const push = (extra: Record<string, unknown> = {}) => ({
  ref: "refs/heads/main",
  after: sha,
  repository,
  sender: { login: "alice", id: 11 },
  ...extra,
});

const pr = (action: string, extra: { head?: Record<string, unknown>; number?: number | undefined } = {}) => ({
  action,
  number: "number" in extra ? extra.number : 42,
  pull_request: {
    head: { sha, ref: "feature", repo: { full_name: "mallory/app" }, ...extra.head },
    base: { repo: repository },
    user: { login: "bob", id: 12 },
  },
  repository,
});

function codeOf(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof DomainError) return e.code;
    throw e;
  }
  throw new Error("expected a DomainError");
}

function runOf(event: string, json: unknown): GithubRunRequest {
  const ev = parseGithubEvent(event, json);
  if (ev.kind !== "run") throw new Error(`expected a run, got ${ev.kind}`);
  return ev.run;
}

describe("parseGithubEvent", () => {
  it("reads a push as a run on its ref and commit, by its sender", () => {
    expect(runOf("push", push())).toEqual({
      trigger: "push",
      commitSha: sha,
      ref: "refs/heads/main",
      headRef: null,
      actor: "alice",
      actorId: 11,
      pullRequest: null,
      repos: null,
    });
  });

  it("starts nothing for a branch deletion, a ping or an event it does not handle", () => {
    expect(parseGithubEvent("push", push({ deleted: true }))).toEqual({
      kind: "ignored",
      reason: "branch deletion starts nothing",
    });
    expect(parseGithubEvent("push", push({ after: "0".repeat(40) })).kind).toBe("ignored");
    expect(parseGithubEvent("ping", {})).toEqual({ kind: "ignored", reason: "ping" });
    expect(parseGithubEvent("issues", {})).toEqual({ kind: "ignored", reason: "event issues starts nothing" });
    expect(parseGithubEvent("", {})).toEqual({ kind: "ignored", reason: "event (none) starts nothing" });
  });

  it("refuses a push whose commit is not a hex object id", () => {
    expect(codeOf(() => parseGithubEvent("push", push({ after: "main" })))).toBe("WEBHOOK.BAD_PAYLOAD");
  });

  it("gives a pull request's run the PR's own ref, never the head branch's name", () => {
    const run = runOf("pull_request", pr("opened", { head: { ref: "main" } }));
    expect(run.ref).toBe("refs/pull/42/head");
    expect(run.headRef).toBe("main");
    expect(run.pullRequest).toBe(42);
    // No sender: the PR's author is the actor.
    expect([run.actor, run.actorId]).toEqual(["bob", 12]);
    expect(run.repos).toEqual({ head: "mallory/app", base: "acme/app" });
  });

  it("reads a close as the PR to cancel, and other actions as nothing", () => {
    expect(parseGithubEvent("pull_request", pr("closed"))).toEqual({ kind: "pr_closed", number: 42 });
    expect(parseGithubEvent("pull_request", pr("labeled"))).toEqual({
      kind: "ignored",
      reason: "pull_request action labeled starts nothing",
    });
  });

  it("refuses a head branch named like a ref, and an opened PR without a number", () => {
    expect(codeOf(() => parseGithubEvent("pull_request", pr("opened", { head: { ref: "refs/heads/main" } })))).toBe(
      "WEBHOOK.HEAD_REF_REFUSED",
    );
    expect(codeOf(() => parseGithubEvent("pull_request", pr("opened", { number: undefined })))).toBe(
      "WEBHOOK.BAD_PAYLOAD",
    );
  });
});

describe("the envelope and the sender", () => {
  it("needs a repository, and keeps the App installation when there is one", () => {
    expect(codeOf(() => parseGithubEnvelope({ action: "opened" }))).toBe("WEBHOOK.BAD_PAYLOAD");
    expect(parseGithubEnvelope({ repository, installation: { id: 5 } })).toEqual({
      repository,
      installation: { id: 5 },
    });
  });

  it("peeks at the sender's numeric id only, falling back to the PR's author", () => {
    expect(peekGithubActorId(push())).toBe(11);
    expect(peekGithubActorId(pr("opened"))).toBe(12);
    expect(peekGithubActorId({ sender: { id: "11" } })).toBeNull();
    expect(peekGithubActorId({ sender: { id: -1 } })).toBeNull();
    expect(peekGithubActorId(null)).toBeNull();
  });
});

describe("githubAdmission", () => {
  it("makes a member's fork PR untrusted and a member's push trusted", () => {
    const fork = runOf("pull_request", pr("opened"));
    expect(computeTrustClass(githubAdmission(fork, true))).toBe("untrusted");
    expect(computeTrustClass(githubAdmission(runOf("push", push()), true))).toBe("trusted");
    expect(computeTrustClass(githubAdmission(runOf("push", push()), false))).toBe("untrusted");
  });
});
