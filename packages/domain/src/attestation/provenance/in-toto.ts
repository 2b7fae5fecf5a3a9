// in-toto Statement v1 (in-toto/attestation spec/v1/statement.md) and SLSA Provenance v1
// (slsa.dev/spec/v1.0/provenance) validation rules. Each failure names its rule, so the verify
// CLI and the quarantine verifier can say exactly what was wrong.

export const STATEMENT_TYPE_V1 = "https://in-toto.io/Statement/v1";
export const SLSA_PROVENANCE_V1 = "https://slsa.dev/provenance/v1";

export interface ResourceDescriptor {
  uri?: string;
  name?: string;
  digest?: Record<string, string>;
  annotations?: Record<string, unknown>;
}

export interface StatementV1 {
  _type: typeof STATEMENT_TYPE_V1;
  subject: { name: string; digest: Record<string, string> }[];
  predicateType: string;
  predicate: Record<string, unknown>;
}

export type RuleResult<T> = { ok: true; value: T } | { ok: false; rule: string; message: string };

const HEX_LENGTHS: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128, sha1: 40, gitCommit: 40 };

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/** A digest set: non-empty; every value lowercase hex, of the algorithm's length when Kiln knows it. */
function checkDigest(d: unknown, where: string): { rule: string; message: string } | null {
  if (!isObject(d) || Object.keys(d).length === 0)
    return { rule: `${where}.digest`, message: `${where} has no digest` };
  for (const [alg, value] of Object.entries(d)) {
    if (typeof value !== "string" || !/^[0-9a-f]+$/.test(value))
      return { rule: `${where}.digest.${alg}`, message: `${where} digest ${alg} is not lowercase hex` };
    const len = HEX_LENGTHS[alg];
    if (len !== undefined && value.length !== len)
      return {
        rule: `${where}.digest.${alg}`,
        message: `${where} digest ${alg} has ${value.length / 2} bytes, not ${len / 2}`,
      };
  }
  return null;
}

export function validateStatement(v: unknown): RuleResult<StatementV1> {
  const bad = (rule: string, message: string): RuleResult<StatementV1> => ({ ok: false, rule, message });
  if (!isObject(v)) return bad("statement.json", "the statement is not a JSON object");
  if (v._type !== STATEMENT_TYPE_V1) return bad("statement._type", `_type must be ${STATEMENT_TYPE_V1}`);
  if (!Array.isArray(v.subject) || v.subject.length === 0)
    return bad("statement.subject", "subject must be a non-empty list");
  for (const [i, s] of (v.subject as unknown[]).entries()) {
    if (!isObject(s)) return bad("statement.subject", `subject ${i} is not an object`);
    if (s.name !== undefined && typeof s.name !== "string")
      return bad("statement.subject.name", `subject ${i} has a non-string name`);
    const d = checkDigest(s.digest, "statement.subject");
    if (d) return bad(d.rule, `subject ${i}: ${d.message}`);
  }
  if (typeof v.predicateType !== "string" || v.predicateType === "")
    return bad("statement.predicateType", "predicateType must be a non-empty URI");
  // The spec lets a statement carry no predicate; provenance without one says nothing, so Kiln's
  // verifier refuses it.
  if (!isObject(v.predicate)) return bad("statement.predicate", "predicate must be an object");
  return { ok: true, value: v as unknown as StatementV1 };
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

function checkDescriptors(list: unknown, where: string): { rule: string; message: string } | null {
  if (list === undefined) return null;
  if (!Array.isArray(list)) return { rule: where, message: `${where} must be a list` };
  for (const [i, r] of list.entries()) {
    if (!isObject(r)) return { rule: where, message: `${where}[${i}] is not an object` };
    // A ResourceDescriptor needs at least one of uri, digest, content (spec/v1/resource_descriptor.md).
    if (typeof r.uri !== "string" && r.digest === undefined && r.content === undefined)
      return { rule: where, message: `${where}[${i}] has neither uri nor digest` };
    if (r.digest !== undefined) {
      const d = checkDigest(r.digest, where);
      if (d) return { rule: d.rule, message: `${where}[${i}]: ${d.message}` };
    }
  }
  return null;
}

/** SLSA Provenance v1's required fields and shapes, after the statement rules passed. */
export function validateSlsaProvenance(s: StatementV1): RuleResult<StatementV1> {
  const bad = (rule: string, message: string): RuleResult<StatementV1> => ({ ok: false, rule, message });
  if (s.predicateType !== SLSA_PROVENANCE_V1)
    return bad("slsa.predicateType", `predicateType must be ${SLSA_PROVENANCE_V1}`);
  const bd = s.predicate.buildDefinition;
  if (!isObject(bd)) return bad("slsa.buildDefinition", "buildDefinition is missing");
  if (typeof bd.buildType !== "string" || !/^[a-z][a-z0-9+.-]*:/.test(bd.buildType))
    return bad("slsa.buildDefinition.buildType", "buildType must be a URI");
  if (!isObject(bd.externalParameters))
    return bad("slsa.buildDefinition.externalParameters", "externalParameters must be an object");
  if (bd.internalParameters !== undefined && !isObject(bd.internalParameters))
    return bad("slsa.buildDefinition.internalParameters", "internalParameters must be an object");
  const deps = checkDescriptors(bd.resolvedDependencies, "slsa.buildDefinition.resolvedDependencies");
  if (deps) return bad(deps.rule, deps.message);
  const rd = s.predicate.runDetails;
  if (!isObject(rd)) return bad("slsa.runDetails", "runDetails is missing");
  if (!isObject(rd.builder) || typeof rd.builder.id !== "string" || !/^[a-z][a-z0-9+.-]*:/.test(rd.builder.id))
    return bad("slsa.runDetails.builder.id", "builder.id must be a URI");
  if (rd.metadata !== undefined) {
    if (!isObject(rd.metadata)) return bad("slsa.runDetails.metadata", "metadata must be an object");
    for (const k of ["startedOn", "finishedOn"] as const) {
      const t = rd.metadata[k];
      if (t !== undefined && (typeof t !== "string" || !RFC3339.test(t)))
        return bad(`slsa.runDetails.metadata.${k}`, `${k} must be an RFC 3339 timestamp`);
    }
  }
  const by = checkDescriptors(rd.byproducts, "slsa.runDetails.byproducts");
  if (by) return bad(by.rule, by.message);
  return { ok: true, value: s };
}
