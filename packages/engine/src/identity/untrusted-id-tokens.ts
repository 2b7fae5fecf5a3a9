import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";

/**
 * A repo's opt-in to ID tokens for its untrusted runs (issue 28, ADR 0024 amended). Off by default:
 * an untrusted run's token says `trust_class: untrusted` and `sub = repo:<repo>:pull_request`, but
 * a relying party whose policy matches only `repository` would still admit it. Audited; idempotent.
 */
export async function setUntrustedIdTokens(
  db: Db,
  input: { fullName: string; enabled: boolean; actor: string; orgId?: string },
): Promise<{ repoId: string; fullName: string; enabled: boolean; changed: boolean }> {
  return withTx(db, "set-untrusted-id-tokens", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; org_id: string; full_name: string; untrusted_id_tokens: boolean }[]>`
      SELECT id, org_id, full_name, untrusted_id_tokens FROM repo
      WHERE lower(full_name) = lower(${input.fullName}) AND (${input.orgId ?? null}::uuid IS NULL OR org_id = ${input.orgId ?? null}::uuid)
      FOR UPDATE`;
    const r = rows[0];
    if (!r) throw new DomainError("REPO.NOT_FOUND", `no repository ${input.fullName} is registered`);
    const changed = r.untrusted_id_tokens !== input.enabled;
    if (changed) {
      await tx.$executeRaw`UPDATE repo SET untrusted_id_tokens = ${input.enabled} WHERE id = ${r.id}::uuid`;
      await recordAuditEvent(tx, {
        orgId: r.org_id,
        kind: "repo.untrusted_id_tokens_changed",
        actor: input.actor,
        subject: r.full_name,
        data: { repo_id: r.id, enabled: input.enabled },
      });
    }
    return { repoId: r.id, fullName: r.full_name, enabled: input.enabled, changed };
  });
}
