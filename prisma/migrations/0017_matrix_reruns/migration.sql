-- Matrix expansions, re-runs of failed jobs and flake detection (issue 20, docs/adr/0030).

-- The expansions of one matrix job are a group (the job's name as written): max_parallel bounds how
-- many are READY or running at once, fail_fast cancels the unfinished ones after a user failure.
-- matrix_values keys a job for flake detection together with its run's commit and workflow hash.
ALTER TABLE "job_run"
  ADD COLUMN "matrix_group" TEXT,
  ADD COLUMN "matrix_values" JSONB,
  ADD COLUMN "max_parallel" INTEGER CHECK ("max_parallel" IS NULL OR "max_parallel" BETWEEN 1 AND 256),
  ADD COLUMN "fail_fast" BOOLEAN NOT NULL DEFAULT false,
  -- A job pinned by a re-run: completed as success without an attempt, its result (and artifact
  -- bindings) those of the job that produced them. Always the original producer, never a pin.
  ADD COLUMN "reused_from_run_id" UUID REFERENCES "workflow_run"("id"),
  ADD COLUMN "reused_from_job_id" UUID REFERENCES "job_run"("id"),
  ADD CONSTRAINT "job_run_reused_pair_check" CHECK (("reused_from_run_id" IS NULL) = ("reused_from_job_id" IS NULL)),
  ADD CONSTRAINT "job_run_reused_success_check" CHECK ("reused_from_job_id" IS NULL OR ("status" = 'completed' AND "outcome" = 'success')),
  ADD CONSTRAINT "job_run_matrix_group_check" CHECK (("matrix_group" IS NULL) = ("matrix_values" IS NULL));

-- A pinned producer's artifacts are looked up by it; the index also answers "is this generation
-- still referenced by a re-run" for retention.
CREATE INDEX "job_run_reused_from_job_idx" ON "job_run" ("reused_from_job_id") WHERE "reused_from_job_id" IS NOT NULL;
CREATE INDEX "job_run_matrix_group_idx" ON "job_run" ("run_id", "matrix_group") WHERE "matrix_group" IS NOT NULL;

-- Flake detection compares runs of one repo at one commit and definition.
CREATE INDEX "workflow_run_repo_commit_idx" ON "workflow_run" ("repo_id", "commit_sha", "workflow_hash");
