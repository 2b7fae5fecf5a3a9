import { DomainError } from "@kiln/domain";
import { findAttestations } from "@kiln/engine";
import { z } from "zod";
import { readProcedure } from "../init.ts";

/**
 * Provenance search (issue 17, auditor views): by artifact digest (sha256:<hex> or bare hex), by
 * commit (7..40 hex) or by run id. Read-only; every role of the org may search, within the org.
 */
export const searchProvenance = readProcedure
  .input(z.object({ by: z.enum(["digest", "commit", "run"]), q: z.string().trim().min(1).max(80) }))
  .query(({ ctx, input }) => {
    const q = input.q.toLowerCase();
    if (input.by === "digest") {
      const hex = q.replace(/^sha256:/, "");
      if (!/^[0-9a-f]{64}$/.test(hex)) throw new DomainError("REQUEST.INVALID", "a digest is sha256:<64 hex digits>");
      return findAttestations(ctx.db, ctx.tenant.orgId, { subjectSha256: hex });
    }
    if (input.by === "commit") {
      if (!/^[0-9a-f]{7,40}$/.test(q)) throw new DomainError("REQUEST.INVALID", "a commit is 7 to 40 hex digits");
      return findAttestations(ctx.db, ctx.tenant.orgId, { commit: q });
    }
    if (!z.uuid().safeParse(q).success) throw new DomainError("REQUEST.INVALID", "a run id is a UUID");
    return findAttestations(ctx.db, ctx.tenant.orgId, { runId: q });
  });
