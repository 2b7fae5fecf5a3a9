-- Issue 19 (docs/adr/0029): the admin console and the public API.

-- Disconnect is a soft disable: the repo row, its runs, jobs, logs and artifacts stay (history and
-- audit keep their references); webhooks for it are recorded as ignored and manual triggers and
-- retries are refused (REPO.DISCONNECTED). Connecting the same name again clears it.
ALTER TABLE "repo" ADD COLUMN "disconnected_at" TIMESTAMPTZ(3);

-- GET /v1/repos/{repo_id}/workflow-runs pages one repo's runs newest first (created_at, id): this
-- index serves every page of it without reading the org's other repos' runs.
CREATE INDEX "workflow_run_repo_id_created_at_id_idx" ON "workflow_run" ("repo_id", "created_at" DESC, "id" DESC);

-- The repositories page shows each repo's last delivery: newest first per repo.
CREATE INDEX "webhook_delivery_repo_id_received_at_idx" ON "webhook_delivery" ("repo_id", "received_at" DESC);
