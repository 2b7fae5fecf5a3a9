import { destroyDueKeys, type DestroyReport, type ShredKeyDeps } from "@kiln/engine";
import { z } from "zod";
import { defineJob } from "./job-definition.ts";

/**
 * Crypto-shredding's destroyer (issue 21, docs/adr/0037): at a due day's first millisecond the
 * data key rows due then and the day's platform key file are destroyed, each with append-only
 * evidence (key id, due, destroyed at) and an audit event. Scheduled every minute, so a key dies
 * within a minute of its due instant; reads refuse from the due instant itself regardless.
 * Idempotent: destroyed rows are not found again, evidence is unique per key, a missing file is a
 * no-op (run-it-twice test beside this file).
 */
export const destroyShredKeysJob = defineJob({
  name: "destroy-shred-keys",
  payload: z.object({}).passthrough(),
  retryLimit: 5,
  retryDelaySeconds: 10,
  expireInSeconds: 10 * 60,
  // Due keys destroyed within a minute of their instant; reads refuse from the instant itself (ADR 0037).
  schedule: "* * * * *",
  handle: async ({ runtime, log }) => {
    const deps = runtime.shred;
    if (!deps) return;
    const r = await runDestroyShredKeys(deps, new Date());
    if (r.dataKeys + r.platformKeys > 0) log.info("shred keys destroyed", { ...r });
  },
});

/** The handler's body, exported so the run-it-twice test drives exactly it. */
export function runDestroyShredKeys(deps: ShredKeyDeps, now: Date): Promise<DestroyReport> {
  return destroyDueKeys(deps, now);
}
