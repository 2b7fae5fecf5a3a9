-- The forge loop (issue 19, docs/adr/0028-the-forge-loop.md): statuses back to the forge, missed
-- deliveries recovered, pull-request cancellation.

-- A repo's forge credential and hook. token_enc is the per-repo token sealed with KILN_SECRETS_KEY
-- (AES-256-GCM, "v1.<kid>.<iv>.<ciphertext>.<tag>", never the plain token); installation_id is the
-- GitHub App installation the repo's webhooks name (learned from the payload's installation.id).
CREATE TABLE "repo_forge" (
    "repo_id" UUID NOT NULL REFERENCES "repo"("id") ON DELETE CASCADE,
    "token_enc" TEXT,
    "hook_id" BIGINT CHECK ("hook_id" > 0),
    "installation_id" BIGINT CHECK ("installation_id" > 0),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "repo_forge_pkey" PRIMARY KEY ("repo_id")
);

-- The pull request a run was admitted for (pull_request events only): PR close and superseding
-- commits find the PR's unfinished runs through it.
CREATE TABLE "run_pull_request" (
    "run_id" UUID NOT NULL REFERENCES "workflow_run"("id") ON DELETE CASCADE,
    "repo_id" UUID NOT NULL,
    "number" INTEGER NOT NULL CHECK ("number" > 0),
    CONSTRAINT "run_pull_request_pkey" PRIMARY KEY ("run_id")
);
CREATE INDEX "run_pull_request_repo_number_idx" ON "run_pull_request" ("repo_id", "number");

-- One row per (repo, commit, context): the state Kiln wants the forge to show and the state it
-- last delivered. desired_seq/delivered_seq are transition_event ids (the ordered log), so a
-- delivery of an older state can never overwrite a newer one: delivered_seq only grows. lease_*
-- makes one delivery at a time per row (the HTTP call happens outside any transaction).
CREATE TABLE "forge_status" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL,
    "repo_id" UUID NOT NULL REFERENCES "repo"("id") ON DELETE CASCADE,
    "commit_sha" TEXT NOT NULL,
    "context" TEXT NOT NULL,
    "run_id" UUID NOT NULL,
    "job_id" UUID,
    "desired_seq" BIGINT NOT NULL,
    "state" TEXT NOT NULL CHECK ("state" IN ('pending','success','failure','error')),
    "description" TEXT NOT NULL CHECK (char_length("description") <= 140),
    "target_url" TEXT,
    "summary" TEXT,
    "delivered_seq" BIGINT NOT NULL DEFAULT 0,
    "delivered_state" TEXT,
    "delivered_at" TIMESTAMPTZ(3),
    "check_run_id" BIGINT,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_http_status" INTEGER,
    "last_error" TEXT,
    "next_attempt_at" TIMESTAMPTZ(3),
    "lease_token" UUID,
    "lease_until" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "forge_status_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "forge_status_context_key" UNIQUE ("repo_id", "commit_sha", "context")
);
CREATE INDEX "forge_status_run_idx" ON "forge_status" ("run_id");
CREATE INDEX "forge_status_undelivered_idx" ON "forge_status" ("next_attempt_at") WHERE "delivered_seq" < "desired_seq";

-- A credential's rate-limit pause: no call with it before "until" (403/429 with Retry-After or
-- x-ratelimit-reset). Keyed by "repo:<id>" for a per-repo token, "installation:<id>" for an App.
CREATE TABLE "forge_rate_limit" (
    "credential_key" TEXT NOT NULL,
    "until" TIMESTAMPTZ(3) NOT NULL,
    "reason" TEXT NOT NULL,
    CONSTRAINT "forge_rate_limit_pkey" PRIMARY KEY ("credential_key")
);

-- The reconciler's durable cursor per hook ("repo:<id>" or "app"): the newest forge delivery id it
-- has examined, so each pass reads only what is new; and the outcome of its last pass.
CREATE TABLE "forge_hook_cursor" (
    "hook_key" TEXT NOT NULL,
    "hook_id" BIGINT,
    "last_seen_delivery_id" BIGINT NOT NULL DEFAULT 0,
    "last_checked_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "redeliveries_requested" INTEGER NOT NULL DEFAULT 0,
    CONSTRAINT "forge_hook_cursor_pkey" PRIMARY KEY ("hook_key")
);

-- Redeliveries asked for, per delivery GUID: bounded (a delivery Kiln keeps refusing, e.g. for a
-- repo it does not know, is asked for at most a few times, not every pass for three days).
CREATE TABLE "forge_redelivery" (
    "guid" TEXT NOT NULL,
    "hook_key" TEXT NOT NULL,
    "forge_delivery_id" BIGINT NOT NULL,
    "requests" INTEGER NOT NULL DEFAULT 1,
    "last_requested_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "forge_redelivery_pkey" PRIMARY KEY ("guid")
);
