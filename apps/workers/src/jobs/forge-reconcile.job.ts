import { forgeStatusJob } from "./forge-status.job.ts";
import { reconcileForgeDeliveries, runsWithUndeliveredStatuses } from "@kiln/engine";
import { z } from "zod";
import { defineJob, type WorkerDeps } from "./job-definition.ts";

/**
 * The forge reconciler (ADR 0028), ticked at start and every KILN_FORGE_RECONCILE_MS, with a cron
 * backstop: (1) missed deliveries: each connected hook's recent deliveries whose GUID Kiln never
 * processed are redelivered by the forge; (2) statuses still undelivered and due (their jobs ran
 * out of retries during a long outage, or a credential was added since) get their delivery job
 * again. Both halves re-read state, so overlapping passes are harmless.
 */
export const forgeReconcileJob = defineJob({
  name: "forge-reconcile",
  payload: z.object({}).passthrough(),
  retryLimit: 0,
  retryDelaySeconds: 1,
  expireInSeconds: 300,
  // At start, then every KILN_FORGE_RECONCILE_MS (ADR 0028); the cron is the backstop.
  schedule: "*/5 * * * *",
  tick: { everyMs: (env) => env.KILN_FORGE_RECONCILE_MS, atStart: true, failure: "forge reconcile failed" },
  handle: async (deps) => {
    await runForgeReconcile(deps);
  },
});

export async function runForgeReconcile({ db, boss, forge, log }: Pick<WorkerDeps, "db" | "boss" | "forge" | "log">) {
  const hooks = await reconcileForgeDeliveries(db, forge);
  for (const h of hooks) {
    if (h.redelivered > 0 || h.error) log.info("forge deliveries reconciled", { ...h });
  }
  const runs = await runsWithUndeliveredStatuses(db);
  for (const runId of runs) await boss.send(forgeStatusJob.name, { runId }, { singletonKey: runId });
  return { hooks, resent: runs.length };
}
