import { builderPrefixFor, PolicyCache, redecideSoakingPromotions, type EnvDeps } from "@kiln/engine";
import { z } from "zod";
import { workersEnv } from "../env.ts";
import { defineJob } from "./job-definition.ts";

/**
 * Issue 18 (docs/adr/0032): a promotion that waits only for the previous environment's soak time
 * is decided again once the soak has passed; nobody else would act on it. Idempotent: it
 * re-decides only pending promotions whose last decision was still soaking, and records nothing
 * while the answer is unchanged, so a second pass (or a second worker) finds nothing to do.
 */
export const redecideSoakingPromotionsJob = defineJob({
  name: "redecide-soaking-promotions",
  payload: z.object({}).passthrough(),
  retryLimit: 2,
  retryDelaySeconds: 30,
  expireInSeconds: 5 * 60,
  // Promotions waiting only for a soak are decided again once it has passed (docs/adr/0032).
  schedule: "* * * * *",
  handle: async ({ db, log }) => {
    // The pass itself (and its run-it-twice test) is the engine's: packages/engine/test/environments/soak.test.ts.
    const r = await redecideSoakingPromotions(db, soakDeps());
    if (r.decided > 0) log.info("soaking promotions decided again", { ...r });
  },
});

let deps: EnvDeps | null = null;
function soakDeps(): EnvDeps {
  if (deps) return deps;
  const env = workersEnv();
  // The same builder id the attestor signs as (attestor-runtime.ts), so the provenance gate agrees.
  deps = {
    builderPrefix: builderPrefixFor(env.KILN_PUBLIC_URL ?? "http://localhost:3000"),
    gateTimeoutMs: env.KILN_GATE_TIMEOUT_MS,
    policies: new PolicyCache(),
  };
  return deps;
}
