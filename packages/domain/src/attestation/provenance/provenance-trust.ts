// What a signed Kiln statement says about whose build it is (issue 28): the builder, the trust class and
// the source. One reading for every consumer (the promotion gate, `kiln verify`), so none of them can
// trust a fork's build because it looked at one field and not another.
import { KILN_BUILD_TYPE } from "./compose-provenance.ts";

/**
 * platform: a trusted run on a host the operator runs (`<instance>/builders/<process|microvm>`);
 * self-hosted: a trusted run on an org's registered runner; untrusted: any run that was not trusted;
 * unknown: a builder id Kiln does not write.
 */
export type BuilderKind = "platform" | "self-hosted" | "untrusted" | "unknown";

export interface ProvenanceTrust {
  builderId: string | null;
  /** `<instance>/builders/` of a builder id Kiln writes; null otherwise. */
  builderPrefix: string | null;
  builder: BuilderKind;
  buildType: string | null;
  /** "trusted" only when the builder, the build type and both parameter sets agree it was. */
  trustClass: "trusted" | "untrusted";
  /** externalParameters.workflow.repository: the clone URL the run was built from. */
  source: string | null;
  ref: string | null;
}

const BUILDER = /^(.+\/builders\/)(process|microvm|self-hosted|untrusted\/(?:process|microvm|self-hosted))$/;

const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
const str = (v: unknown): string | null => (typeof v === "string" ? v : null);

export function readProvenanceTrust(statement: { predicate?: unknown } | null): ProvenanceTrust {
  const pred = obj(statement?.predicate);
  const bd = obj(pred.buildDefinition);
  const ext = obj(bd.externalParameters);
  const int = obj(bd.internalParameters);
  const id = str(obj(obj(pred.runDetails).builder).id);
  const m = id ? BUILDER.exec(id) : null;
  const where = m?.[2] ?? null;
  const builder: BuilderKind = !where
    ? "unknown"
    : where.startsWith("untrusted/")
      ? "untrusted"
      : where === "self-hosted"
        ? "self-hosted"
        : "platform";
  const buildType = str(bd.buildType);
  // Statements written before issue 28 carry the trust class only in internalParameters (and a fork's
  // under the trusted builder id and build type): every signal must say trusted.
  const trusted =
    (builder === "platform" || builder === "self-hosted") &&
    buildType === KILN_BUILD_TYPE &&
    int.trustClass === "trusted" &&
    (ext.trustClass === undefined || ext.trustClass === "trusted");
  return {
    builderId: id,
    builderPrefix: m?.[1] ?? null,
    builder,
    buildType,
    trustClass: trusted ? "trusted" : "untrusted",
    source: str(obj(ext.workflow).repository),
    ref: str(obj(ext.workflow).ref),
  };
}

/**
 * A repository as an auditor names it and as the statement records it, compared alike: `git+`, the
 * scheme, userinfo, a trailing `.git` and slashes dropped, the host lowercased. The path keeps its case
 * (not every forge folds it).
 */
export function normalizeSource(repo: string): string {
  let s = repo.trim().replace(/^git\+/, "");
  s = s.replace(/^[a-z][a-z0-9+.-]*:\/\//i, "");
  s = s.replace(/^[^/@]*@/, "");
  s = s
    .replace(/\/+$/, "")
    .replace(/\.git$/, "")
    .replace(/\/+$/, "");
  const slash = s.indexOf("/");
  return slash < 0 ? s.toLowerCase() : s.slice(0, slash).toLowerCase() + s.slice(slash);
}

export type SourceCheck =
  | { ok: true; trust: ProvenanceTrust }
  | { ok: false; rule: "provenance.source" | "provenance.untrusted" | "provenance.builder"; message: string };

/**
 * `kiln verify --source` (issue 28): the statement names this repository, and was a trusted run on a
 * builder Kiln writes, unless the auditor allows untrusted builds (then the trust class is still shown).
 */
export function checkProvenanceSource(
  statement: { predicate?: unknown },
  expected: { source: string; allowUntrusted: boolean },
): SourceCheck {
  const trust = readProvenanceTrust(statement);
  if (!trust.source || normalizeSource(trust.source) !== normalizeSource(expected.source))
    return {
      ok: false,
      rule: "provenance.source",
      message: `built from ${trust.source ?? "(no repository)"}, not ${expected.source}`,
    };
  if (trust.builder === "unknown")
    return { ok: false, rule: "provenance.builder", message: `builder ${trust.builderId ?? "(none)"} is not Kiln's` };
  if (trust.trustClass !== "trusted" && !expected.allowUntrusted)
    return {
      ok: false,
      rule: "provenance.untrusted",
      message: `an untrusted build (builder ${trust.builderId}, buildType ${trust.buildType ?? "(none)"}): not the project's own; --allow-untrusted accepts it`,
    };
  return { ok: true, trust };
}
