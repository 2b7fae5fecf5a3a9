// Who may read an attestation's envelope (issue 28, ADR 0026 "Amended (issue 28)"). The public log
// holds only commitments; the envelope and the salt that ties it to its leaf are served to the
// org's members and auditors (the org in the query, never only a role check), and to anyone for
// a repo its admins marked public.
import { withTx, type Db } from "@kiln/db";
import { DomainError } from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { bundleForAttestation, type AttestationBundle, type BundleRow } from "./attestation-bundle.ts";
import type { TlogPort } from "./tlog-port.ts";

/**
 * The bundle of the attestation logged at `index`, for a caller of `orgId` (null: anonymous).
 * Another org's private entry and an entry that is not an attestation answer the same
 * ATTESTATION.NOT_FOUND, so the answer tells nothing about whose it is.
 */
export async function attestationBundleForLogIndex(
  db: Db,
  tlog: TlogPort,
  input: { orgId: string | null; index: bigint },
): Promise<AttestationBundle> {
  const rows = await db.$queryRaw<(BundleRow & { artifact_id: string | null })[]>`
    SELECT a.id, a.key_id, a.envelope, a.tlog_salt, a.tlog_index, a.state,
           (SELECT s.generation_id::text FROM attestation_subject s WHERE s.attestation_id = a.id
            ORDER BY s.name LIMIT 1) AS artifact_id
    FROM attestation a
    JOIN workflow_run r ON r.id = a.run_id
    JOIN repo p ON p.id = r.repo_id
    WHERE a.tlog_index = ${input.index}
      AND (a.org_id = ${input.orgId}::uuid OR p.provenance_public)`;
  const a = rows[0];
  if (!a)
    throw new DomainError(
      "ATTESTATION.NOT_FOUND",
      `no attestation of yours (or of a public repo) at log index ${input.index}`,
    );
  return bundleForAttestation(db, tlog, a, a.artifact_id);
}

/**
 * An org admin (API, `role` given) or the operator (CLI, no role) marks a repo's provenance public
 * or private; audited. The repo is looked up within the caller's org in the query itself.
 */
export async function setProvenanceVisibility(
  db: Db,
  input: {
    orgId: string;
    /** The API caller's role; only an admin may change it. Omitted by the operator's CLI. */
    role?: string;
    repo: { id: string } | { fullName: string };
    public: boolean;
    actor: string;
  },
): Promise<{ repo_id: string; full_name: string; provenance_public: boolean; changed: boolean }> {
  if (input.role !== undefined && input.role !== "admin")
    throw new DomainError("AUTH.FORBIDDEN", "making provenance public or private needs the admin role");
  const byId = "id" in input.repo ? input.repo.id : null;
  const byName = "fullName" in input.repo ? input.repo.fullName : null;
  return withTx(db, "set-provenance-visibility", async (tx) => {
    const rows = await tx.$queryRaw<{ id: string; full_name: string; was: boolean }[]>`
      SELECT id::text, full_name, provenance_public AS was FROM repo
      WHERE org_id = ${input.orgId}::uuid
        AND (id = ${byId}::uuid OR full_name = ${byName})
      FOR UPDATE`;
    const r = rows[0];
    if (!r) throw new DomainError("REPO.NOT_FOUND", "no such repo in this org");
    const out = { repo_id: r.id, full_name: r.full_name, provenance_public: input.public };
    if (r.was === input.public) return { ...out, changed: false };
    await tx.$executeRaw`UPDATE repo SET provenance_public = ${input.public} WHERE id = ${r.id}::uuid`;
    await recordAuditEvent(tx, {
      orgId: input.orgId,
      kind: "repo.provenance_visibility_changed",
      actor: input.actor,
      subject: `repo:${r.id}`,
      data: { full_name: r.full_name, public: input.public },
    });
    return { ...out, changed: true };
  });
}
