import { DomainError } from "@kiln/domain";
import { latestCheckpoint } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

/**
 * GET /tlog/checkpoint: the latest signed checkpoint (C2SP tlog-checkpoint in a signed note,
 * docs/adr/0026), text/plain, public. Sizes never decrease; a new one follows new entries within
 * seconds (the workers' sign-tlog-checkpoint job).
 */
export const GET = route({
  handler: async () => {
    const cp = await latestCheckpoint(services().db);
    if (!cp)
      throw new DomainError("TLOG.NO_CHECKPOINT", "the log has not signed a checkpoint yet (are the workers running?)");
    return new Response(cp.note, {
      status: 200,
      headers: {
        "content-type": "text/plain; charset=utf-8",
        "cache-control": "no-cache",
        "access-control-allow-origin": "*",
      },
    });
  },
});
