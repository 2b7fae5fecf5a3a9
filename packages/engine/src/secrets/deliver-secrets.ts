// The secret broker (issue 16, ADR 0025): the agent asks with its job token at job start. One
// transaction checks that the attempt is current, decides by the run's trust class, writes one
// secret.read audit record per value and decrypts; the caller answers only after it commits, so
// every value that leaves has a committed record. Refusals write none.
import { withTx, type Db } from "@kiln/db";
import { decideSecretDelivery, DomainError, type StoredSecretRef, type TrustClass } from "@kiln/domain";
import { assertHostNotRevoked } from "../shared/host-revoked.ts";
import { recordAuditEvent } from "../audit/index.ts";
import { orgDataKey } from "./data-key.ts";
import { openSecret } from "./envelope.ts";
import type { KekSource } from "./kek.ts";

export interface DeliveredSecrets {
  delivered: { name: string; version: number; value: string }[];
  withheld: { cause: string; message: string } | null;
  missing: string[];
  required: boolean;
}

interface AttemptContext {
  org_id: string;
  repo_id: string;
  run_id: string;
  ref: string | null;
  trust_class: TrustClass;
  declared: string[] | null;
  required: boolean | null;
  /** The environment of the deploy run this attempt belongs to (issue 18); null for any other run. */
  environment_id: string | null;
}

export async function deliverSecrets(
  db: Db,
  keks: KekSource,
  claims: { attemptId: string; jobId: string; epoch: number },
  report: { epoch: number },
): Promise<DeliveredSecrets> {
  if (report.epoch !== claims.epoch)
    throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${report.epoch} is not the epoch of this job token`);
  return withTx(db, "deliver-secrets", async (tx) => {
    // FOR SHARE: a completion or fence of this attempt waits until the delivery has committed (or
    // commits first, and then this finds no current attempt).
    const rows = await tx.$queryRaw<AttemptContext[]>`
      SELECT a.org_id, r.repo_id, r.id AS run_id, r.ref, r.trust_class,
             ARRAY(SELECT jsonb_array_elements_text(COALESCE(r.definition->'jobs'->j.job_index->'secrets', '[]'::jsonb))) AS declared,
             (r.definition->'jobs'->j.job_index->>'secretsRequired')::boolean AS required,
             (SELECT d.environment_id FROM deployment d WHERE d.run_id = r.id AND r.trigger = 'deploy') AS environment_id
      FROM attempt a JOIN job_run j ON j.id = a.job_id JOIN workflow_run r ON r.id = a.run_id
      WHERE a.id = ${claims.attemptId}::uuid AND a.job_id = ${claims.jobId}::uuid AND a.epoch = ${claims.epoch}
        AND a.status = 'running' AND j.current_epoch = a.epoch AND a.lease_expires_at > now()
      FOR SHARE OF a`;
    const ctx = rows[0];
    if (!ctx)
      throw new DomainError("ATTEMPT.STALE_EPOCH", `epoch ${claims.epoch} is not the job's current, live attempt`);
    await assertHostNotRevoked(tx, claims.attemptId);
    const declared = ctx.declared ?? [];
    const required = ctx.required === true;
    const stored =
      declared.length === 0 || ctx.trust_class !== "trusted"
        ? []
        : await tx.$queryRaw<(StoredSecretRef & { ciphertext: Uint8Array })[]>`
            SELECT name, scope, version, ciphertext FROM secret
            WHERE org_id = ${ctx.org_id}::uuid AND deleted_at IS NULL AND name = ANY(${declared}::text[])
              AND (scope = 'org' OR scope = 'repo:' || ${ctx.repo_id}
                   -- An environment's secrets go to that environment's deploy runs and nowhere else.
                   OR (${ctx.environment_id}::uuid IS NOT NULL AND scope = 'env:' || ${ctx.environment_id}::text))`;
    const decision = decideSecretDelivery({ trustClass: ctx.trust_class, declared, required, stored });
    if (decision.kind === "none") return { delivered: [], withheld: null, missing: [], required };
    if (decision.kind === "withheld")
      return { delivered: [], withheld: { cause: decision.cause, message: decision.message }, missing: [], required };
    if (decision.picks.length === 0) return { delivered: [], withheld: null, missing: decision.missing, required };
    const dek = await orgDataKey(tx, keks, ctx.org_id, { create: false });
    try {
      const delivered: DeliveredSecrets["delivered"] = [];
      for (const pick of decision.picks) {
        const row = stored.find((s) => s.name === pick.name && s.scope === pick.scope);
        if (!row) throw new Error(`picked secret ${pick.name} has no row`);
        // Decrypt before the record: a value that does not open rolls the whole delivery back.
        const value = openSecret(
          dek,
          { orgId: ctx.org_id, scope: row.scope, name: row.name, version: row.version },
          Buffer.from(row.ciphertext),
        );
        await recordAuditEvent(tx, {
          orgId: ctx.org_id,
          kind: "secret.read",
          actor: `agent:${claims.attemptId}`,
          subject: `${row.scope}:${row.name}`,
          data: {
            org_id: ctx.org_id,
            repo_id: ctx.repo_id,
            ref: ctx.ref,
            run_id: ctx.run_id,
            job_id: claims.jobId,
            attempt_id: claims.attemptId,
            attempt: claims.epoch,
            trust_class: ctx.trust_class,
            // Named only on a deploy run's reads (issue 18): which environment received the value.
            ...(ctx.environment_id ? { environment_id: ctx.environment_id } : {}),
            scope: row.scope,
            name: row.name,
            version: row.version,
          },
        });
        delivered.push({ name: row.name, version: row.version, value });
      }
      return { delivered, withheld: null, missing: decision.missing, required };
    } finally {
      dek.fill(0);
    }
  });
}
