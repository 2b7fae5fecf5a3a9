import { tlogStatus } from "@kiln/engine";
import { publicProcedure } from "../init.ts";

/**
 * The transparency log at a glance (issue 17): committed entries, the latest signed checkpoint and
 * the verifier key to pin. Public, like /tlog/checkpoint: the log is for anyone to audit.
 */
export const getTlogStatus = publicProcedure.query(async ({ ctx }) => {
  const s = await tlogStatus(ctx.db);
  return {
    entries: s.entries,
    verifierKey: s.verifierKey,
    checkpoint: s.checkpoint && {
      size: s.checkpoint.size,
      rootHash: Buffer.from(s.checkpoint.rootHash).toString("base64"),
      signedAt: s.checkpoint.createdAt.toISOString(),
      note: s.checkpoint.note,
    },
  };
});
