import { describe, expect, it } from "vitest";
import { decide, overridableFailures, requesterMustBeMember } from "./decide.ts";
import { known, unavailable, type PromotionFacts } from "./gate-facts.ts";
import { approvalIneligibility } from "./gates.ts";
import { defaultPolicy, gatePolicySchema, parsePolicy, type GatePolicyInput } from "./policy-schema.ts";

const D = "a".repeat(64);
const NOW = new Date("2026-12-02T10:00:00Z");
const policy = (p: GatePolicyInput) => gatePolicySchema.parse(p);

function facts(over: Partial<PromotionFacts> = {}): PromotionFacts {
  return {
    kind: "promote",
    environment: { name: "staging", production: false },
    requester: { userId: "u-req", login: "req" },
    changeAuthors: ["u-author"],
    artifact: { generationId: "g1", name: "app", digest: D },
    builderPrefix: "https://kiln.test/builders/",
    run: known({
      status: "completed",
      outcome: "success",
      trustClass: "trusted",
      ref: "refs/heads/main",
      jobs: [{ name: "build", status: "completed", outcome: "success" }],
    }),
    attestation: known({
      signatureValid: true,
      signatureRule: null,
      subjectDigests: [D],
      inLog: true,
      verifierState: "verified",
      builderId: "https://kiln.test/builders/microvm",
      builderKind: "platform",
      trustClass: "trusted",
      sourceRef: "refs/heads/main",
    }),
    quarantined: known(false),
    previous: known(null),
    approvals: known([]),
    ...over,
  };
}
const code = (d: ReturnType<typeof decide>, gate: string) => d.reasons.find((r) => r.gate === gate)?.code;
const attest = (o: object) => {
  const f = facts();
  if (!f.attestation.ok || !f.attestation.value) throw new Error("fixture");
  return known({ ...f.attestation.value, ...o });
};

describe("decide: each gate allows, and denies for its reason", () => {
  const base = policy({ gates: { required_outcomes: {}, provenance: {} } });
  it("allows when every gate passes, with one reason per gate", () => {
    const d = decide(base, facts(), NOW);
    expect(d.verdict).toBe("allow");
    expect(d.reasons.map((r) => r.code)).toEqual(["OUTCOMES.OK", "PROVENANCE.OK"]);
    expect(d.failMode).toBe("closed");
  });
  it("required outcomes: a failed run or job", () => {
    const f = facts();
    if (!f.run.ok) throw new Error("fixture");
    const failed = decide(base, facts({ run: known({ ...f.run.value, outcome: "failure" }) }), NOW);
    expect([failed.verdict, code(failed, "required_outcomes")]).toEqual([
      "override_required",
      "OUTCOMES.RUN_NOT_SUCCEEDED",
    ]);
    const job = decide(
      base,
      facts({ run: known({ ...f.run.value, jobs: [{ name: "test", status: "completed", outcome: "failure" }] }) }),
      NOW,
    );
    expect(code(job, "required_outcomes")).toBe("OUTCOMES.JOB_NOT_SUCCEEDED");
  });
  it.each([
    [{ signatureValid: false, signatureRule: "dsse.signature" }, "PROVENANCE.SIGNATURE_INVALID"],
    [{ subjectDigests: ["b".repeat(64)] }, "PROVENANCE.SUBJECT_MISMATCH"],
    [{ inLog: false }, "PROVENANCE.NOT_IN_LOG"],
    [{ verifierState: "mismatch" }, "PROVENANCE.VERIFY_FAILED"],
    [{ builderId: "https://evil.example/builders/microvm" }, "PROVENANCE.FOREIGN_BUILDER"],
    [{ trustClass: "untrusted" }, "PROVENANCE.UNTRUSTED_RUN"],
  ])("provenance %o denies with %s, and no override sets it aside", (o, c) => {
    const d = decide(base, facts({ attestation: attest(o) }), NOW, { overridden: ["provenance"] });
    expect([d.verdict, code(d, "provenance")]).toEqual(["deny", c]);
  });
  it("provenance: no attestation, quarantined, a source ref outside the pattern", () => {
    expect(code(decide(base, facts({ attestation: known(null) }), NOW), "provenance")).toBe("PROVENANCE.MISSING");
    const q = decide(base, facts({ quarantined: known(true) }), NOW);
    expect([q.verdict, code(q, "provenance")]).toEqual(["deny", "PROVENANCE.QUARANTINED"]);
    const refs = policy({ gates: { provenance: { source_refs: ["refs/tags/v*"] } } });
    expect(code(decide(refs, facts(), NOW), "provenance")).toBe("PROVENANCE.SOURCE_REF_NOT_ALLOWED");
    expect(decide(refs, facts({ attestation: attest({ sourceRef: "refs/tags/v1.2" }) }), NOW).verdict).toBe("allow");
  });
  it("production takes only the platform builder's trusted builds, whatever the policy says (issue 28)", () => {
    const prod = { environment: { name: "production", production: true } };
    const lax = policy({ gates: { provenance: { require_trusted: false } } });
    // An org's self-hosted runner (it reported microvm; its builder id says self-hosted).
    const selfHosted = attest({ builderId: "https://kiln.test/builders/self-hosted", builderKind: "self-hosted" });
    const d = decide(base, facts({ ...prod, attestation: selfHosted }), NOW, { overridden: ["provenance"] });
    expect([d.verdict, code(d, "provenance")]).toEqual(["deny", "PROVENANCE.NOT_PLATFORM_BUILDER"]);
    expect(decide(base, facts({ attestation: selfHosted }), NOW).verdict).toBe("allow");
    // A fork's build: its own builder id, untrusted; require_trusted: false does not open production.
    const fork = attest({
      builderId: "https://kiln.test/builders/untrusted/microvm",
      builderKind: "untrusted",
      trustClass: "untrusted",
    });
    const f = decide(lax, facts({ ...prod, attestation: fork }), NOW);
    expect([f.verdict, code(f, "provenance")]).toEqual(["deny", "PROVENANCE.UNTRUSTED_RUN"]);
    expect(code(decide(lax, facts({ attestation: fork }), NOW), "provenance")).toBe("PROVENANCE.OK");
    // A builder id that only looks like the platform's under another prefix is not it.
    const nested = attest({ builderId: "https://kiln.test/builders/x/builders/microvm" });
    expect(code(decide(base, facts({ ...prod, attestation: nested }), NOW), "provenance")).toBe(
      "PROVENANCE.NOT_PLATFORM_BUILDER",
    );
    expect(decide(base, facts(prod), NOW).verdict).toBe("allow");
  });
  it("previous environment with soak time", () => {
    const p = policy({ gates: { previous_environment: { soak_seconds: 3600 } } });
    const never = decide(p, facts({ previous: known({ name: "staging", stays: [] }) }), NOW);
    expect([never.verdict, code(never, "previous_environment")]).toEqual([
      "override_required",
      "PREVIOUS.NOT_DEPLOYED",
    ]);
    const short = facts({
      previous: known({ name: "staging", stays: [{ from: new Date(NOW.getTime() - 60_000), until: null }] }),
    });
    expect(code(decide(p, short, NOW), "previous_environment")).toBe("PREVIOUS.SOAKING");
    const long = facts({
      previous: known({
        name: "staging",
        stays: [{ from: new Date("2026-12-01T00:00:00Z"), until: new Date("2026-12-01T02:00:00Z") }],
      }),
    });
    expect(decide(p, long, NOW).verdict).toBe("allow");
  });
  it("approvals: pending, approved, rejected; named members and roles", () => {
    const p = policy({ gates: { approvals: { count: 2 } } });
    const one = facts({ approvals: known([{ userId: "u1", login: "ann", role: "member", decision: "approve" }]) });
    const pending = decide(p, one, NOW);
    expect([pending.verdict, code(pending, "approvals")]).toEqual(["override_required", "APPROVALS.PENDING"]);
    const two = facts({
      approvals: known([
        { userId: "u1", login: "ann", role: "member", decision: "approve" },
        { userId: "u2", login: "bob", role: "admin", decision: "approve" },
      ]),
    });
    expect(decide(p, two, NOW).verdict).toBe("allow");
    const rej = facts({ approvals: known([{ userId: "u1", login: "ann", role: "member", decision: "reject" }]) });
    expect([decide(p, rej, NOW).verdict, code(decide(p, rej, NOW), "approvals")]).toEqual([
      "deny",
      "APPROVALS.REJECTED",
    ]);
    const named = policy({ gates: { approvals: { count: 1, members: ["carol"] } } });
    expect(decide(named, one, NOW).verdict).toBe("override_required");
    const admins = policy({ gates: { approvals: { count: 1, role: "admin" } } });
    expect(decide(admins, one, NOW).verdict).toBe("override_required");
    expect(decide(admins, two, NOW).verdict).toBe("allow");
  });
  it("freeze windows in a time zone, across midnight, and absolute", () => {
    // 10:00Z on Wednesday 2 Dec 2026 is 11:00 in Paris and 05:00 in New York.
    const paris = policy({
      gates: {
        freeze_windows: { windows: [{ time_zone: "Europe/Paris", days: ["wed"], start: "10:30", end: "12:00" }] },
      },
    });
    expect(code(decide(paris, facts(), NOW), "freeze_windows")).toBe("FREEZE.ACTIVE");
    const ny = policy({
      gates: { freeze_windows: { windows: [{ time_zone: "America/New_York", start: "10:30", end: "12:00" }] } },
    });
    expect(decide(ny, facts(), NOW).verdict).toBe("allow");
    const night = policy({
      gates: {
        freeze_windows: { windows: [{ time_zone: "America/New_York", days: ["tue"], start: "22:00", end: "06:00" }] },
      },
    });
    expect(code(decide(night, facts(), NOW), "freeze_windows")).toBe("FREEZE.ACTIVE");
    const abs = policy({
      gates: { freeze_windows: { windows: [{ start_at: "2026-12-24T00:00:00Z", end_at: "2026-12-27T00:00:00Z" }] } },
    });
    expect(decide(abs, facts(), NOW).verdict).toBe("allow");
    expect(code(decide(abs, facts(), new Date("2026-12-25T12:00:00Z")), "freeze_windows")).toBe("FREEZE.ACTIVE");
  });
  it("allowed refs", () => {
    const p = policy({ gates: { allowed_refs: { patterns: ["main", "release/*"] } } });
    expect(decide(p, facts(), NOW).verdict).toBe("allow");
    const f = facts();
    if (!f.run.ok) throw new Error("fixture");
    const feature = facts({ run: known({ ...f.run.value, ref: "refs/heads/feature/x" }) });
    expect(code(decide(p, feature, NOW), "allowed_refs")).toBe("REFS.NOT_ALLOWED");
  });
});

describe("decide: fail modes", () => {
  const p = policy({ fail_mode: "open", gates: { required_outcomes: {}, provenance: {}, approvals: { count: 1 } } });
  it("production fails closed with GATE.UNAVAILABLE whatever the document says", () => {
    const d = decide(
      p,
      facts({ environment: { name: "prod-eu", production: true }, run: unavailable("statement timeout") }),
      NOW,
    );
    expect(d.failMode).toBe("closed");
    expect([d.verdict, code(d, "required_outcomes")]).toEqual(["deny", "GATE.UNAVAILABLE"]);
  });
  it("a fail-open environment skips the unevaluable gate and records it", () => {
    const d = decide(p, facts({ approvals: unavailable("timeout") }), NOW);
    expect(d.failMode).toBe("open");
    expect(d.reasons.find((r) => r.gate === "approvals")?.status).toBe("skipped");
    expect(d.verdict).toBe("allow");
  });
  it("provenance never fails open", () => {
    const d = decide(p, facts({ quarantined: unavailable("timeout") }), NOW);
    expect([d.verdict, code(d, "provenance")]).toEqual(["deny", "GATE.UNAVAILABLE"]);
  });
  it("an unknown policy version denies", () => {
    expect(decide(null, facts(), NOW)).toMatchObject({ verdict: "deny", reasons: [{ code: "GATE.UNAVAILABLE" }] });
  });
});

describe("separation of duties and overrides", () => {
  const g = { count: 1, separation_of_duties: true };
  it("the requester and the change's author cannot approve; an auditor never", () => {
    const f = facts();
    expect(approvalIneligibility(f, g, { userId: "u-req", login: "req", role: "admin" })?.code).toBe(
      "APPROVAL.SEPARATION_OF_DUTIES",
    );
    expect(approvalIneligibility(f, g, { userId: "u-author", login: "author", role: "admin" })?.code).toBe(
      "APPROVAL.SEPARATION_OF_DUTIES",
    );
    // By member id, not by login: a login equal to the author's is not the author.
    expect(approvalIneligibility(f, g, { userId: "u9", login: "author", role: "admin" })).toBeNull();
    expect(approvalIneligibility(f, g, { userId: "u9", login: "aud", role: "auditor" })?.code).toBe(
      "APPROVAL.NOT_ELIGIBLE",
    );
    expect(approvalIneligibility(f, g, { userId: "u9", login: "other", role: "member" })).toBeNull();
    // Even if one were recorded, it is not counted.
    const p = policy({ gates: { approvals: g } });
    const self = facts({ approvals: known([{ userId: "u-req", login: "req", role: "admin", decision: "approve" }]) });
    expect(decide(p, self, NOW).verdict).toBe("override_required");
    const off = policy({ gates: { approvals: { ...g, separation_of_duties: false } } });
    expect(decide(off, self, NOW).verdict).toBe("allow");
  });
  it("an unknown requester or author counts against every approver (issue 28: token self-approval)", () => {
    // An org token requested it (no member), or the run was triggered by one: whoever approves
    // might be that person, so no approval counts while separation of duties applies.
    const noRequester = facts({ requester: { userId: null, login: null } });
    expect(approvalIneligibility(noRequester, g, { userId: "u9", login: "other", role: "admin" })).toMatchObject({
      code: "APPROVAL.SEPARATION_OF_DUTIES",
      message: expect.stringContaining("requester is not a known member"),
    });
    const noAuthor = facts({ changeAuthors: [null] });
    expect(approvalIneligibility(noAuthor, g, { userId: "u9", login: "other", role: "admin" })).toMatchObject({
      code: "APPROVAL.SEPARATION_OF_DUTIES",
      message: expect.stringContaining("author is not a known member"),
    });
    const approved = known([{ userId: "u9", login: "other", role: "admin" as const, decision: "approve" as const }]);
    const p = policy({ gates: { approvals: g } });
    expect(decide(p, { ...noRequester, approvals: approved }, NOW).verdict).toBe("override_required");
    expect(decide(p, { ...noAuthor, approvals: approved }, NOW).verdict).toBe("override_required");
    expect(decide(p, { ...facts(), approvals: approved }, NOW).verdict).toBe("allow");
    // Without separation of duties nobody needs to be known.
    const off = policy({ gates: { approvals: { ...g, separation_of_duties: false } } });
    expect(decide(off, { ...noAuthor, requester: noRequester.requester, approvals: approved }, NOW).verdict).toBe(
      "allow",
    );
  });
  it("a request needs a member requester exactly where approvals with separation of duties apply", () => {
    expect(requesterMustBeMember(policy({ gates: { approvals: { count: 1 } } }), "promote")).toBe(true);
    expect(requesterMustBeMember(policy({ gates: { approvals: { count: 1 } } }), "rollback")).toBe(false);
    expect(requesterMustBeMember(policy({ gates: { approvals: { count: 1, on_rollback: true } } }), "rollback")).toBe(
      true,
    );
    expect(
      requesterMustBeMember(policy({ gates: { approvals: { count: 1, separation_of_duties: false } } }), "promote"),
    ).toBe(false);
    expect(requesterMustBeMember(policy({ gates: {} }), "promote")).toBe(false);
  });
  it("an override sets aside the overridable gates that failed, and only those", () => {
    const p = policy({
      gates: {
        approvals: { count: 1 },
        freeze_windows: { windows: [{ start_at: "2026-12-01T00:00:00Z", end_at: "2026-12-03T00:00:00Z" }] },
      },
    });
    const d = decide(p, facts(), NOW);
    expect(overridableFailures(d, p)).toEqual(["approvals", "freeze_windows"]);
    expect(decide(p, facts(), NOW, { overridden: ["approvals"] }).verdict).toBe("override_required");
    const both = decide(p, facts(), NOW, { overridden: ["approvals", "freeze_windows"] });
    expect(both.verdict).toBe("allow");
    expect(both.reasons.map((r) => r.status)).toEqual(["overridden", "overridden"]);
    const locked = policy({
      gates: {
        freeze_windows: {
          overridable: false,
          windows: [{ start_at: "2026-12-01T00:00:00Z", end_at: "2026-12-03T00:00:00Z" }],
        },
      },
    });
    expect(decide(locked, facts(), NOW, { overridden: ["freeze_windows"] }).verdict).toBe("deny");
  });
  it("a rollback skips soak, approvals and freezes by default, never provenance", () => {
    const p = defaultPolicy({ name: "production", production: true, hasPrevious: true });
    const rb = facts({
      kind: "rollback",
      environment: { name: "production", production: true },
      previous: known({ name: "staging", stays: [] }),
    });
    expect(decide(p, rb, NOW).verdict).toBe("allow");
    expect(decide(p, { ...rb, quarantined: known(true) }, NOW).verdict).toBe("deny");
  });
});

describe("policies", () => {
  it("defaults per the issue", () => {
    expect(defaultPolicy({ name: "staging", production: false, hasPrevious: false }).gates).toEqual({
      required_outcomes: {},
      provenance: {},
    });
    expect(Object.keys(defaultPolicy({ name: "production", production: false, hasPrevious: true }).gates)).toEqual([
      "required_outcomes",
      "provenance",
      "previous_environment",
      "approvals",
    ]);
  });
  it("refuses fail-open production, a previous gate without a previous environment, unknown zones", () => {
    const bad = parsePolicy(
      {
        fail_mode: "open",
        gates: {
          previous_environment: { soak_seconds: 1 },
          freeze_windows: { windows: [{ time_zone: "Mars/Base", start: "00:00", end: "01:00" }] },
        },
      },
      { name: "production", production: true, hasPrevious: false },
    );
    expect(bad.ok ? [] : bad.problems.map((p) => p.path)).toEqual([
      "fail_mode",
      "gates.previous_environment",
      "gates.freeze_windows.windows.0.time_zone",
    ]);
    expect(parsePolicy({ gates: { bogus: {} } }, { name: "x", production: false, hasPrevious: false }).ok).toBe(false);
  });
});
