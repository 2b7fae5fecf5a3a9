// The database accepts exactly the state and outcome values the domain owns (conventions 2). The
// columns are text with CHECK constraints (prisma/schema.prisma), so Prisma's generated types say
// only `string`; the proof is read from a migrated database instead: every enum-like constraint
// (`col IN (...)`, and any PostgreSQL enum) in the real migrations is compared with the domain's
// const array for that column, in both directions.
import {
  APPROVAL_DECISIONS,
  FAIL_MODES,
  OVERRIDE_STATES,
  PROMOTION_KINDS,
  PROMOTION_STATES,
  VERDICTS,
  ARTIFACT_FORMATS,
  ATTESTATION_ALGORITHMS,
  ATTESTATION_ROW_STATES,
  FORGE_STATES,
  RUNNER_SIZES,
  RUNNER_STATES,
  QUARANTINE_KINDS,
  POOL_SCOPES,
  SCHEDULE_ORIGINS,
  SECRET_KEK_STATES,
  SHRED_DATA_KINDS,
  SHRED_KEY_KINDS,
  SHRED_READ_PATHS,
  SHRED_SAMPLE_OUTCOMES,
  ARTIFACT_STATES,
  ATTEMPT_STATUSES,
  CACHE_ENTRY_STATES,
  CACHE_KINDS,
  CACHE_NAMESPACES,
  CACHE_RESTORE_RESULTS,
  CACHE_RESTORE_TIERS,
  CACHE_SAVE_RESULTS,
  dispatch,
  EGRESS_DECISIONS,
  EGRESS_RULE_ACTIONS,
  ID_TOKEN_ALGS,
  JOB_STATUSES,
  LOG_STATES,
  LOG_STREAMS,
  OUTCOMES,
  ROLES,
  RETENTION_CLASSES,
  RETENTION_KINDS,
  RUN_STATUSES,
  TRUST_CLASSES,
  DEPLOYMENT_STATES,
  LOCK_RELEASE_REASONS,
} from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { useMigratedDb } from "./support.ts";

/** Every enum-like column of the schema and the domain union it stores. */
const DOMAIN_VALUES: Record<string, readonly string[]> = {
  "workflow_run.status": RUN_STATUSES,
  "workflow_run.outcome": OUTCOMES,
  "workflow_run.trust_class": TRUST_CLASSES,
  "job_run.status": JOB_STATUSES,
  "job_run.outcome": OUTCOMES,
  "job_run.tier": dispatch.TIERS,
  "attempt.status": ATTEMPT_STATUSES,
  "attempt.outcome": OUTCOMES,
  "membership.role": ROLES,
  "api_token.role": ROLES,
  "artifact_generation.state": ARTIFACT_STATES,
  "artifact_generation.format": ARTIFACT_FORMATS,
  "log_attempt.state": LOG_STATES,
  "log_chunk.stream": LOG_STREAMS,
  "egress_event.decision": EGRESS_DECISIONS,
  "egress_rule_change.action": EGRESS_RULE_ACTIONS,
  "cache_entry.state": CACHE_ENTRY_STATES,
  "cache_entry.kind": CACHE_KINDS,
  "cache_entry.namespace": CACHE_NAMESPACES,
  "cache_job_stat.trust_class": TRUST_CLASSES,
  "cache_job_stat.restore_result": CACHE_RESTORE_RESULTS,
  "cache_job_stat.restore_tier": CACHE_RESTORE_TIERS,
  "cache_job_stat.save_result": CACHE_SAVE_RESULTS,
  "pool.min_isolation": dispatch.ISOLATION_CLASSES,
  "id_token_key.alg": ID_TOKEN_ALGS,
  "attestation.state": ATTESTATION_ROW_STATES,
  "attestation_key.algorithm": ATTESTATION_ALGORITHMS,
  "forge_status.state": FORGE_STATES,
  "job_run.runner_size": RUNNER_SIZES,
  "schedule.origin": SCHEDULE_ORIGINS,
  "secret_kek.state": SECRET_KEK_STATES,
  "artifact_generation.retention_class": RETENTION_CLASSES,
  "log_attempt.retention_class": RETENTION_CLASSES,
  "log_segment.retention_class": RETENTION_CLASSES,
  "workflow_run.retention_class": RETENTION_CLASSES,
  "org_retention_window.kind": RETENTION_KINDS,
  "org_retention_window.class": RETENTION_CLASSES,
  "shred_data_key.kind": SHRED_DATA_KINDS,
  "shred_data_key.class": RETENTION_CLASSES,
  "shred_object.kind": SHRED_DATA_KINDS,
  "shred_destruction.key_kind": SHRED_KEY_KINDS,
  "shred_sample.path": SHRED_READ_PATHS,
  "shred_sample.outcome": SHRED_SAMPLE_OUTCOMES,
  "environment.fail_mode": FAIL_MODES,
  "promotion.kind": PROMOTION_KINDS,
  "promotion.state": PROMOTION_STATES,
  "promotion.verdict": VERDICTS,
  "promotion.fail_mode": FAIL_MODES,
  "promotion_approval.decision": APPROVAL_DECISIONS,
  "promotion_override.state": OVERRIDE_STATES,
  "environment_pointer_move.kind": PROMOTION_KINDS,
  "runner.state": RUNNER_STATES,
  "runner.quarantine_kind": QUARANTINE_KINDS,
  "runner.isolation": dispatch.ISOLATION_CLASSES,
  "pool.scope": POOL_SCOPES,
  "deployment.state": DEPLOYMENT_STATES,
  "deployment_lock.release_reason": LOCK_RELEASE_REASONS,
};

const t = useMigratedDb(2);

// pg_get_constraintdef's normal form of `col IN ('a', 'b')`, of `col IS NULL OR col IN (...)`, and
// of a one-value list `col IN ('a')`. Anything else (ranges, regexes, cross-column rules) is not a
// value list and is left out.
const VALUE_LIST = [
  /^CHECK \(\((?<col>\w+) = ANY \(ARRAY\[(?<vals>[^\]]*)\]\)\)\)$/,
  /^CHECK \(\(\((?<col>\w+) IS NULL\) OR \(\k<col> = ANY \(ARRAY\[(?<vals>[^\]]*)\]\)\)\)\)$/,
  /^CHECK \(\((?<col>\w+) = (?<vals>'(?:[^']|'')*'::text)\)\)$/,
];

function valueList(def: string): { col: string; values: string[] } | null {
  for (const re of VALUE_LIST) {
    const m = re.exec(def);
    if (m?.groups?.col && m.groups.vals !== undefined) {
      const values = [...m.groups.vals.matchAll(/'((?:[^']|'')*)'::text/g)].map((v) =>
        (v[1] ?? "").replaceAll("''", "'"),
      );
      // A list of numbers (quota_notice.threshold IN (80, 100), ADR 0045) is a bound, not one of
      // the domain's string unions.
      if (values.length === 0) return null;
      return { col: m.groups.col, values };
    }
  }
  return null;
}

const sorted = (xs: readonly string[]) => [...xs].sort();

describe("the migrated database's state constraints are the domain's unions", () => {
  it("finds the value lists it compares (the parser still understands the server)", () => {
    expect(valueList("CHECK ((status = ANY (ARRAY['pending'::text, 'ready'::text])))")).toEqual({
      col: "status",
      values: ["pending", "ready"],
    });
    expect(valueList("CHECK (((outcome IS NULL) OR (outcome = ANY (ARRAY['success'::text]))))")).toEqual({
      col: "outcome",
      values: ["success"],
    });
    expect(valueList("CHECK ((namespace = 'trusted'::text))")).toEqual({ col: "namespace", values: ["trusted"] });
    expect(valueList("CHECK (((status = 'completed'::text) = (outcome IS NOT NULL)))")).toBeNull();
    expect(valueList("CHECK ((threshold = ANY (ARRAY[80, 100])))")).toBeNull();
    expect(valueList("CHECK ((sha256 ~ '^[0-9a-f]{64}$'::text))")).toBeNull();
  });

  it("every enum-like column holds exactly its domain union, and every union has its constraint", async () => {
    const checks = await t.db().$queryRaw<{ tbl: string; def: string }[]>`
      SELECT c.conrelid::regclass::text AS tbl, pg_get_constraintdef(c.oid) AS def
      FROM pg_constraint c JOIN pg_namespace ns ON ns.oid = c.connamespace
      WHERE c.contype = 'c' AND ns.nspname = 'public'`;
    const enums = await t.db().$queryRaw<{ typname: string; labels: string[] }[]>`
      SELECT t.typname::text AS typname, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
      FROM pg_type t JOIN pg_namespace ns ON ns.oid = t.typnamespace JOIN pg_enum e ON e.enumtypid = t.oid
      WHERE ns.nspname = 'public' GROUP BY t.typname`;
    const inDb: Record<string, string[]> = {};
    for (const c of checks) {
      const list = valueList(c.def);
      if (list) inDb[`${c.tbl}.${list.col}`] = sorted(list.values);
    }
    for (const e of enums) inDb[`enum ${e.typname}`] = sorted(e.labels);
    expect(Object.keys(inDb).length).toBeGreaterThanOrEqual(20);
    const inDomain = Object.fromEntries(Object.entries(DOMAIN_VALUES).map(([k, v]) => [k, sorted(v)]));
    expect(inDb).toEqual(inDomain);
  });
});
