-- Read paths measured by the dashboard (docs/adr/0010): GET run and the run page look attempts up by
-- run; the org home aggregates finished jobs and recent attempts per org; retries link to parents.
CREATE INDEX IF NOT EXISTS "attempt_run_id_idx" ON "attempt" ("run_id");
CREATE INDEX IF NOT EXISTS "attempt_org_claimed_idx" ON "attempt" ("org_id", "claimed_at");
CREATE INDEX IF NOT EXISTS "job_run_org_finished_idx" ON "job_run" ("org_id", "finished_at") WHERE "status" = 'completed';
CREATE INDEX IF NOT EXISTS "workflow_run_parent_idx" ON "workflow_run" ("parent_run_id") WHERE "parent_run_id" IS NOT NULL;
