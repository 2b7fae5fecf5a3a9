import { freezeRunJob } from "./freeze-run.job.ts";
import { reconcileJob } from "./reconcile.job.ts";

/** Every pg-boss job the workers run. */
export const JOBS = [freezeRunJob, reconcileJob] as const;
