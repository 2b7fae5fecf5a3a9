import path from "node:path";
import { admitManualRun, authenticateApiToken, manualTriggerBody } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { env } from "@/server/env.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

export const POST = route({
  body: manualTriggerBody,
  uuidParams: ["repoId"],
  handler: async ({ req, params, body }) => {
    const { db } = services();
    const e = env();
    const caller = await authenticateApiToken(db, req.headers.get("authorization"));
    const r = await admitManualRun(db, {
      caller,
      repoId: params.repoId ?? "",
      idempotencyKey: req.headers.get("idempotency-key"),
      body,
      // Its own mirrors: the workers' (workflow fetch at freeze) are shallow and owned by them.
      source: {
        gitCacheDir: path.resolve(e.KILN_DATA_DIR, "git-ref-check"),
        policy: { localReposRoot: e.KILN_LOCAL_REPOS_ROOT ?? null },
      },
    });
    return json(202, { run_id: r.runId });
  },
});
