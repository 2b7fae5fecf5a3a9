import { describe, expect, it } from "vitest";
import { fromBase64Any, toBase64, utf8 } from "./bytes.ts";
import { canonicalJson } from "./canonical-json.ts";
import {
  composeProvenance,
  invocationId,
  KILN_BUILD_TYPE,
  KILN_UNTRUSTED_BUILD_TYPE,
  type ProvenanceInput,
} from "./compose-provenance.ts";
import { pae, parseEnvelope } from "./dsse.ts";
import { validateSlsaProvenance, validateStatement } from "./in-toto.ts";
import { checkProvenanceSource, normalizeSource, readProvenanceTrust } from "./provenance-trust.ts";

const dec = (b: Uint8Array) => new TextDecoder().decode(b);

describe("DSSE PAE (secure-systems-lab/dsse protocol.md test vector)", () => {
  it("encodes type and body with byte lengths", () => {
    expect(dec(pae("http://example.com/HelloWorld", utf8("hello world")))).toBe(
      "DSSEv1 29 http://example.com/HelloWorld 11 hello world",
    );
  });
  it("counts bytes, not characters", () => {
    expect(dec(pae("t", utf8("é")))).toBe("DSSEv1 1 t 2 é");
  });
});

describe("base64 in envelopes", () => {
  // The spec's signature, in both alphabets: a verifier MUST accept either.
  const std = "A3JqsQGtVsJ2O2xqrI5IcnXip5GToJ3F+FnZ+O88SjtR6rDAajabZKciJTfUiHqJPcIAriEGAHTVeCUjW2JIZA==";
  const url = std.replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  it("decodes standard and URL-safe alike", () => {
    const a = fromBase64Any(std);
    expect(a).not.toBeNull();
    expect(a?.length).toBe(64);
    expect(fromBase64Any(url)).toEqual(a);
    expect(toBase64(a ?? new Uint8Array())).toBe(std);
  });
  it("refuses what is not base64", () => {
    for (const bad of ["a", "ab$d", "abc=d", "A3Jq*"]) expect(fromBase64Any(bad)).toBeNull();
    // non-zero padding bits: a second encoding of the same bytes is refused
    expect(fromBase64Any("aGVsbG9=")).toBeNull();
  });
  it("parses an envelope written in either alphabet", () => {
    for (const sig of [std, url]) {
      const p = parseEnvelope({ payload: "aGVsbG8gd29ybGQ", payloadType: "x", signatures: [{ sig }] });
      expect(p.ok).toBe(true);
      if (p.ok) expect(dec(p.payload)).toBe("hello world");
    }
    expect(parseEnvelope({ payload: "aGVsbG8", payloadType: "x", signatures: [] })).toMatchObject({
      ok: false,
      rule: "dsse.signatures",
    });
  });
});

const S = (over: Record<string, unknown>) => ({
  _type: "https://in-toto.io/Statement/v1",
  subject: [{ name: "a.txt", digest: { sha256: "a".repeat(64) } }],
  predicateType: "https://slsa.dev/provenance/v1",
  predicate: {},
  ...over,
});

describe("in-toto Statement v1 rules", () => {
  it.each([
    ["bad _type", S({ _type: "https://in-toto.io/Statement/v0.1" }), "statement._type"],
    ["empty subject", S({ subject: [] }), "statement.subject"],
    ["subject without digest", S({ subject: [{ name: "a" }] }), "statement.subject.digest"],
    [
      "31-byte sha256",
      S({ subject: [{ name: "a", digest: { sha256: "ab".repeat(31) } }] }),
      "statement.subject.digest.sha256",
    ],
    [
      "non-hex sha256",
      S({ subject: [{ name: "a", digest: { sha256: "g".repeat(64) } }] }),
      "statement.subject.digest.sha256",
    ],
    ["empty predicateType", S({ predicateType: "" }), "statement.predicateType"],
    ["no predicate", { ...S({}), predicate: undefined }, "statement.predicate"],
  ])("rejects %s", (_name, st, rule) => {
    const r = validateStatement(st);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.rule).toBe(rule);
  });
});

const INPUT: ProvenanceInput = {
  instanceUri: "https://kiln.example/",
  org: { id: "00000000-0000-4000-8000-000000000001", slug: "acme" },
  repo: { fullName: "acme/app", cloneUrl: "https://git.example/acme/app.git" },
  run: {
    id: "00000000-0000-4000-8000-000000000002",
    ref: "refs/heads/main",
    commitSha: "c".repeat(40),
    workflowPath: ".kiln/workflow.yaml",
    workflowSha256: "d".repeat(64),
    inputsSha256: "5".repeat(64),
    trustClass: "trusted",
  },
  job: {
    id: "00000000-0000-4000-8000-000000000003",
    name: "compile",
    pool: "default",
    epoch: 2,
    isolation: "microvm",
    host: { kind: "platform", isolation: "microvm" },
    image: { ref: "r.example/base:1", digest: `sha256:${"e".repeat(64)}` },
  },
  startedOn: new Date("2026-01-01T00:00:00Z"),
  finishedOn: new Date("2026-01-01T00:01:00Z"),
  subjects: [{ name: "app", sha256: "f".repeat(64) }],
  restored: [{ name: "lib", fromJob: "deps", sha256: "1".repeat(64), runId: "r", jobId: "j", epoch: 1 }],
  caches: [{ key: "k", sha256: "2".repeat(64), entryId: "e" }],
  logs: { stdoutSha256: "3".repeat(64), stderrSha256: "4".repeat(64) },
};

describe("composeProvenance", () => {
  it("yields a statement that passes the in-toto and SLSA rules and names the winning epoch", () => {
    const st = composeProvenance(INPUT);
    const v = validateStatement(JSON.parse(canonicalJson(st)));
    expect(v.ok).toBe(true);
    if (v.ok) expect(validateSlsaProvenance(v.value).ok).toBe(true);
    const pred = st.predicate as {
      runDetails: { metadata: { invocationId: string }; builder: { id: string } };
      buildDefinition: { resolvedDependencies: { uri?: string; digest?: Record<string, string> }[] };
    };
    expect(pred.runDetails.metadata.invocationId).toBe(invocationId(INPUT.instanceUri, INPUT.run.id, INPUT.job.id, 2));
    expect(pred.runDetails.metadata.invocationId).toMatch(/\/jobs\/00000000-0000-4000-8000-000000000003\/attempts\/2$/);
    expect(pred.runDetails.builder.id).toBe("https://kiln.example/builders/microvm");
    expect(pred.buildDefinition.resolvedDependencies[0]).toEqual({
      uri: "git+https://git.example/acme/app.git@refs/heads/main",
      digest: { gitCommit: "c".repeat(40) },
    });
    expect(pred.buildDefinition.resolvedDependencies.map((d) => d.digest?.sha256)).toEqual(
      expect.arrayContaining(["d".repeat(64), "e".repeat(64), "1".repeat(64), "2".repeat(64)]),
    );
  });
  it("rejects provenance whose byproduct digest is malformed", () => {
    const st = composeProvenance({ ...INPUT, logs: { stdoutSha256: "xyz", stderrSha256: "4".repeat(64) } });
    const r = validateSlsaProvenance(st);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.rule).toBe("slsa.runDetails.byproducts.digest.sha256");
  });
});

describe("whose build it is (issue 28)", () => {
  const untrusted: ProvenanceInput = { ...INPUT, run: { ...INPUT.run, trustClass: "untrusted" } };
  const selfHosted: ProvenanceInput = { ...INPUT, job: { ...INPUT.job, host: { kind: "self-hosted" } } };
  const pred = (p: ProvenanceInput) =>
    composeProvenance(p).predicate as {
      runDetails: { builder: { id: string } };
      buildDefinition: { buildType: string; externalParameters: { trustClass: string } };
    };

  it("a trusted run on a platform host is the platform builder under Kiln's build type", () => {
    const st = composeProvenance(INPUT);
    expect(pred(INPUT).buildDefinition.buildType).toBe(KILN_BUILD_TYPE);
    expect(readProvenanceTrust(st)).toMatchObject({
      builder: "platform",
      builderPrefix: "https://kiln.example/builders/",
      trustClass: "trusted",
      source: "https://git.example/acme/app.git",
    });
  });
  it("a fork's (untrusted) build has a builder id and a build type of its own that name its trust class", () => {
    const p = pred(untrusted);
    expect(p.runDetails.builder.id).toBe("https://kiln.example/builders/untrusted/microvm");
    expect(p.buildDefinition.buildType).toBe(KILN_UNTRUSTED_BUILD_TYPE);
    expect(p.buildDefinition.externalParameters.trustClass).toBe("untrusted");
    const st = composeProvenance(untrusted);
    expect(validateSlsaProvenance(st).ok).toBe(true);
    expect(readProvenanceTrust(st)).toMatchObject({ builder: "untrusted", trustClass: "untrusted" });
  });
  it("an org's runner is the self-hosted builder whatever isolation its agent reported", () => {
    expect(pred(selfHosted).runDetails.builder.id).toBe("https://kiln.example/builders/self-hosted");
    expect(readProvenanceTrust(composeProvenance(selfHosted))).toMatchObject({
      builder: "self-hosted",
      trustClass: "trusted",
    });
    const forkOnOrgRunner = { ...selfHosted, run: untrusted.run };
    expect(pred(forkOnOrgRunner).runDetails.builder.id).toBe("https://kiln.example/builders/untrusted/self-hosted");
  });
  it("reads a fork's statement written before issue 28 (trusted builder id, trust class inside) as untrusted", () => {
    const old = composeProvenance(untrusted);
    const p = old.predicate as { runDetails: { builder: { id: string } }; buildDefinition: Record<string, unknown> };
    p.runDetails.builder.id = "https://kiln.example/builders/microvm";
    p.buildDefinition.buildType = KILN_BUILD_TYPE;
    delete (p.buildDefinition.externalParameters as Record<string, unknown>).trustClass;
    expect(readProvenanceTrust(old)).toMatchObject({ builder: "platform", trustClass: "untrusted" });
    expect(checkProvenanceSource(old, { source: "https://git.example/acme/app", allowUntrusted: false })).toMatchObject(
      { ok: false, rule: "provenance.untrusted" },
    );
  });
  it("--source: the repository must match; an untrusted build only with --allow-untrusted", () => {
    const src = "https://git.example/acme/app.git";
    expect(checkProvenanceSource(composeProvenance(INPUT), { source: src, allowUntrusted: false }).ok).toBe(true);
    for (const same of ["git.example/acme/app", "https://GIT.example/acme/app/", "git+https://git.example/acme/app"])
      expect(normalizeSource(same)).toBe(normalizeSource(src));
    expect(
      checkProvenanceSource(composeProvenance(INPUT), { source: "https://git.example/evil/app", allowUntrusted: true }),
    ).toMatchObject({ ok: false, rule: "provenance.source" });
    expect(normalizeSource("https://git.example/Acme/app")).not.toBe(normalizeSource(src));
    const fork = composeProvenance(untrusted);
    expect(checkProvenanceSource(fork, { source: src, allowUntrusted: false })).toMatchObject({
      ok: false,
      rule: "provenance.untrusted",
    });
    expect(checkProvenanceSource(fork, { source: src, allowUntrusted: true })).toMatchObject({
      ok: true,
      trust: { trustClass: "untrusted", builderId: "https://kiln.example/builders/untrusted/microvm" },
    });
    const foreign = composeProvenance(INPUT);
    (foreign.predicate as { runDetails: { builder: { id: string } } }).runDetails.builder.id = "https://x.example/b";
    expect(checkProvenanceSource(foreign, { source: src, allowUntrusted: true })).toMatchObject({
      ok: false,
      rule: "provenance.builder",
    });
  });
});

describe("canonicalJson", () => {
  it("sorts keys at every depth and writes no whitespace", () => {
    expect(canonicalJson({ b: [{ z: 1, a: "x" }], a: null })).toBe('{"a":null,"b":[{"a":"x","z":1}]}');
  });
  it("refuses floats", () => {
    expect(() => canonicalJson({ a: 1.5 })).toThrow();
  });
});
