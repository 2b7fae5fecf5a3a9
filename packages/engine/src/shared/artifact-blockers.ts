// What still needs a bound, sealed artifact generation `g` of run `r` (docs/adr/0036): one SQL
// fragment for every place that must agree on it — the retention worker (which does not evict what
// is needed) and the re-sealer (which moves what is needed to a later data key before its key dies,
// docs/adr/0037 "Reseal"). Two copies would drift, and a drift is either a destroyed artifact that
// a pointer still names or a retention that never ends.
//
// Pointer and history by generation id (what env-core records); promotions still pending or
// deploying, and runs re-using the producing job that have not finished, consume it; its own run
// unfinished may still retry (and re-bind) it.
export const ARTIFACT_BLOCKER_COLUMNS = `
    EXISTS (SELECT 1 FROM environment e WHERE e.current_generation_id = g.id) AS environment_pointer,
    EXISTS (SELECT 1 FROM environment_pointer_move m WHERE m.to_generation_id = g.id)
      OR EXISTS (SELECT 1 FROM environment_pointer_move m WHERE m.from_generation_id = g.id) AS pointer_history,
    EXISTS (SELECT 1 FROM retention_hold h WHERE h.generation_id = g.id AND h.removed_at IS NULL) AS hold,
    EXISTS (SELECT 1 FROM promotion p WHERE p.generation_id = g.id AND p.state IN ('pending','deploying'))
      OR EXISTS (SELECT 1 FROM job_run u JOIN workflow_run ur ON ur.id = u.run_id
                 WHERE u.reused_from_job_id = g.job_id AND ur.status <> 'completed') AS consuming_run,
    r.status <> 'completed' AS retryable_run`;

/** The blocker columns ARTIFACT_BLOCKER_COLUMNS names, for "any of them" over its output. */
export const ARTIFACT_BLOCKERS = [
  "environment_pointer",
  "pointer_history",
  "hold",
  "consuming_run",
  "retryable_run",
] as const;
