-- Generated offline by prisma@6.19.3 'migrate diff --from-empty' (see docs/adr/0002-database-migrations.md),
-- then extended below the marker with what Prisma's schema language cannot say.

-- CreateTable
CREATE TABLE "org" (
    "id" UUID NOT NULL,
    "slug" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "org_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "app_user" (
    "id" UUID NOT NULL,
    "login" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "app_user_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "membership" (
    "org_id" UUID NOT NULL,
    "user_id" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "membership_pkey" PRIMARY KEY ("org_id","user_id")
);

-- CreateTable
CREATE TABLE "api_token" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "role" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "api_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_token" (
    "id" UUID NOT NULL,
    "pool" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "agent_token_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "agent_session" (
    "id" UUID NOT NULL,
    "agent_token_id" UUID NOT NULL,
    "pool" TEXT NOT NULL,
    "hostname" TEXT NOT NULL,
    "labels" JSONB NOT NULL,
    "capacity" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "agent_session_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "repo" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "full_name" TEXT NOT NULL,
    "clone_url" TEXT NOT NULL,
    "webhook_secret" TEXT NOT NULL,
    "workflow_path" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "repo_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "webhook_delivery" (
    "id" UUID NOT NULL,
    "provider" TEXT NOT NULL,
    "delivery_id" TEXT NOT NULL,
    "event" TEXT NOT NULL,
    "repo_id" UUID NOT NULL,
    "run_id" UUID,
    "outcome" TEXT NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "webhook_delivery_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "idempotency_key" (
    "id" UUID NOT NULL,
    "caller_id" UUID NOT NULL,
    "repo_id" UUID NOT NULL,
    "key" TEXT NOT NULL,
    "request_digest" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "run_id" UUID,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "idempotency_key_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "workflow_run" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "repo_id" UUID NOT NULL,
    "status" TEXT NOT NULL,
    "outcome" TEXT,
    "cause" TEXT,
    "cause_message" TEXT,
    "trust_class" TEXT NOT NULL,
    "trigger" TEXT NOT NULL,
    "actor" TEXT,
    "ref" TEXT,
    "commit_sha" TEXT NOT NULL,
    "workflow_path" TEXT NOT NULL,
    "workflow_hash" TEXT,
    "definition" JSONB,
    "inputs" JSONB NOT NULL,
    "parent_run_id" UUID,
    "cancel_version" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "workflow_run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "job_run" (
    "id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "job_index" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "needs" INTEGER[],
    "pool" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "outcome" TEXT,
    "cause" TEXT,
    "cause_message" TEXT,
    "dispatch_generation" INTEGER NOT NULL DEFAULT 0,
    "current_epoch" INTEGER NOT NULL DEFAULT 0,
    "platform_retries" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3),
    "ready_at" TIMESTAMPTZ(3),
    "dispatched_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "job_run_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "attempt" (
    "id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "epoch" INTEGER NOT NULL,
    "session_id" UUID NOT NULL,
    "claim_request_id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "outcome" TEXT,
    "cause" TEXT,
    "cause_message" TEXT,
    "exit_code" INTEGER,
    "lease_expires_at" TIMESTAMPTZ(3) NOT NULL,
    "cancel_requested" BOOLEAN NOT NULL DEFAULT false,
    "stopped_at" TIMESTAMPTZ(3),
    "queued_ms" INTEGER,
    "image_ms" INTEGER,
    "dispatch_ms" INTEGER,
    "execution_ms" INTEGER,
    "finalize_ms" INTEGER,
    "claimed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "attempt_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "artifact_generation" (
    "id" UUID NOT NULL,
    "attempt_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "epoch" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "object_key" TEXT NOT NULL,
    "size_bytes" BIGINT,
    "sha256" TEXT,
    "state" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "sealed_at" TIMESTAMPTZ(3),

    CONSTRAINT "artifact_generation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "artifact_binding" (
    "id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "name" TEXT NOT NULL,
    "generation_id" UUID NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "artifact_binding_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "outbox" (
    "id" BIGSERIAL NOT NULL,
    "topic" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "dedupe_key" TEXT,
    "deliver_after" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),

    CONSTRAINT "outbox_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "transition_event" (
    "id" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL,
    "run_id" UUID,
    "job_id" UUID,
    "attempt_id" UUID,
    "entity" TEXT NOT NULL,
    "from_state" TEXT,
    "to_state" TEXT NOT NULL,
    "reason" TEXT NOT NULL,
    "data" JSONB,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "transition_event_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "platform_secret" (
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "platform_secret_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE UNIQUE INDEX "org_slug_key" ON "org"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "app_user_login_key" ON "app_user"("login");

-- CreateIndex
CREATE UNIQUE INDEX "api_token_token_hash_key" ON "api_token"("token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "agent_token_token_hash_key" ON "agent_token"("token_hash");

-- CreateIndex
CREATE UNIQUE INDEX "repo_full_name_key" ON "repo"("full_name");

-- CreateIndex
CREATE INDEX "repo_org_id_idx" ON "repo"("org_id");

-- CreateIndex
CREATE UNIQUE INDEX "webhook_delivery_provider_delivery_id_key" ON "webhook_delivery"("provider", "delivery_id");

-- CreateIndex
CREATE UNIQUE INDEX "idempotency_key_caller_id_repo_id_key_key" ON "idempotency_key"("caller_id", "repo_id", "key");

-- CreateIndex
CREATE INDEX "workflow_run_org_id_created_at_idx" ON "workflow_run"("org_id", "created_at" DESC);

-- CreateIndex
CREATE INDEX "workflow_run_status_idx" ON "workflow_run"("status");

-- CreateIndex
CREATE INDEX "job_run_status_pool_idx" ON "job_run"("status", "pool");

-- CreateIndex
CREATE UNIQUE INDEX "job_run_run_id_job_index_key" ON "job_run"("run_id", "job_index");

-- CreateIndex
CREATE UNIQUE INDEX "attempt_claim_request_id_key" ON "attempt"("claim_request_id");

-- CreateIndex
CREATE INDEX "attempt_status_lease_expires_at_idx" ON "attempt"("status", "lease_expires_at");

-- CreateIndex
CREATE INDEX "attempt_session_id_status_idx" ON "attempt"("session_id", "status");

-- CreateIndex
CREATE UNIQUE INDEX "attempt_job_id_epoch_key" ON "attempt"("job_id", "epoch");

-- CreateIndex
CREATE UNIQUE INDEX "artifact_generation_object_key_key" ON "artifact_generation"("object_key");

-- CreateIndex
CREATE UNIQUE INDEX "artifact_generation_attempt_id_name_key" ON "artifact_generation"("attempt_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "artifact_binding_generation_id_key" ON "artifact_binding"("generation_id");

-- CreateIndex
CREATE UNIQUE INDEX "artifact_binding_job_id_name_key" ON "artifact_binding"("job_id", "name");

-- CreateIndex
CREATE INDEX "outbox_unpublished_idx" ON "outbox"("deliver_after");

-- CreateIndex
CREATE INDEX "transition_event_run_id_id_idx" ON "transition_event"("run_id", "id");

-- AddForeignKey
ALTER TABLE "membership" ADD CONSTRAINT "membership_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "org"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "membership" ADD CONSTRAINT "membership_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "app_user"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "api_token" ADD CONSTRAINT "api_token_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "org"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "repo" ADD CONSTRAINT "repo_org_id_fkey" FOREIGN KEY ("org_id") REFERENCES "org"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "job_run" ADD CONSTRAINT "job_run_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "workflow_run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "attempt" ADD CONSTRAINT "attempt_job_id_fkey" FOREIGN KEY ("job_id") REFERENCES "job_run"("id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- ---- hand-written: defaults, state-value checks and partial indexes ----
-- Ids default in the database too, because guarded transitions are written in SQL.
ALTER TABLE "org" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "app_user" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "api_token" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "agent_token" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "agent_session" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "repo" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "webhook_delivery" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "idempotency_key" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "workflow_run" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "job_run" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "attempt" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "artifact_generation" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();
ALTER TABLE "artifact_binding" ALTER COLUMN "id" SET DEFAULT gen_random_uuid();

-- The six outcomes and the state sets are owned by @kiln/domain; the database refuses anything else.
ALTER TABLE "workflow_run" ADD CONSTRAINT "workflow_run_status_check" CHECK ("status" IN ('pending','running','cancelling','completed'));
ALTER TABLE "workflow_run" ADD CONSTRAINT "workflow_run_outcome_check" CHECK ("outcome" IS NULL OR "outcome" IN ('success','user_failure','platform_failure','cancelled','timed_out','blocked_by_policy'));
ALTER TABLE "workflow_run" ADD CONSTRAINT "workflow_run_terminal_check" CHECK (("status" = 'completed') = ("outcome" IS NOT NULL));
ALTER TABLE "workflow_run" ADD CONSTRAINT "workflow_run_trust_check" CHECK ("trust_class" IN ('trusted','untrusted'));
ALTER TABLE "job_run" ADD CONSTRAINT "job_run_status_check" CHECK ("status" IN ('pending','ready','running','completed'));
ALTER TABLE "job_run" ADD CONSTRAINT "job_run_outcome_check" CHECK ("outcome" IS NULL OR "outcome" IN ('success','user_failure','platform_failure','cancelled','timed_out','blocked_by_policy'));
ALTER TABLE "job_run" ADD CONSTRAINT "job_run_terminal_check" CHECK (("status" = 'completed') = ("outcome" IS NOT NULL));
ALTER TABLE "attempt" ADD CONSTRAINT "attempt_status_check" CHECK ("status" IN ('running','completed'));
ALTER TABLE "attempt" ADD CONSTRAINT "attempt_outcome_check" CHECK ("outcome" IS NULL OR "outcome" IN ('success','user_failure','platform_failure','cancelled','timed_out','blocked_by_policy'));
ALTER TABLE "membership" ADD CONSTRAINT "membership_role_check" CHECK ("role" IN ('admin','member','auditor'));
ALTER TABLE "api_token" ADD CONSTRAINT "api_token_role_check" CHECK ("role" IN ('admin','member','auditor'));
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_state_check" CHECK ("state" IN ('uploading','sealed','abandoned'));

-- One winning attempt per job, enforced by the database as well as by the completion transaction.
CREATE UNIQUE INDEX "attempt_one_success_per_job" ON "attempt" ("job_id") WHERE "outcome" = 'success';
-- At most one live attempt per job.
CREATE UNIQUE INDEX "attempt_one_running_per_job" ON "attempt" ("job_id") WHERE "status" = 'running';
-- The relay scans only unpublished rows.
DROP INDEX "outbox_unpublished_idx";
CREATE INDEX "outbox_unpublished_idx" ON "outbox" ("deliver_after", "id") WHERE "published_at" IS NULL;
-- Candidate selection for claims and the reconciler's sweeps.
CREATE INDEX "job_run_ready_idx" ON "job_run" ("pool", "ready_at") WHERE "status" = 'ready';
CREATE INDEX "attempt_running_lease_idx" ON "attempt" ("lease_expires_at") WHERE "status" = 'running';
