-- Deploy runs and the deployment lock (issue 18, docs/adr/0033-deploy-runs-and-deployment-locks.md).
-- After a gated pointer move (0018's environment_pointer_move), an environment with a deploy
-- workflow gets a deploy run: that workflow read at the promoted artifact's commit, the promoted
-- generation restored by id and digest, the environment's variables and secrets, an OIDC token
-- whose sub names the environment. One deployment holds an environment's lock at a time.

-- Deploy-time configuration of an environment (never read from the gated workflow file).
CREATE TABLE "environment_deploy_config" (
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    -- Read at the promoted artifact's commit, so the deploy steps are the ones that were built with it.
    "workflow_path" TEXT NOT NULL CHECK (length("workflow_path") BETWEEN 1 AND 500
        AND "workflow_path" !~ '(^/|(^|/)\.\.(/|$))'),
    -- Where the promoted artifact is placed in each deploy job's workspace (null: .kiln/promoted/<name>).
    "artifact_path" TEXT CHECK ("artifact_path" IS NULL OR (length("artifact_path") BETWEEN 1 AND 500
        AND "artifact_path" !~ '(^/|(^|/)\.\.(/|$))')),
    "updated_by" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "environment_deploy_config_pkey" PRIMARY KEY ("environment_id")
);

-- Plain (non-secret) deploy-time variables, given to every job of the environment's deploy runs.
CREATE TABLE "environment_variable" (
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "name" TEXT NOT NULL CHECK ("name" ~ '^[A-Za-z_][A-Za-z0-9_]{0,99}$' AND "name" !~* '^KILN_'),
    "value" TEXT NOT NULL CHECK (octet_length("value") <= 4096),
    "updated_by" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "environment_variable_pkey" PRIMARY KEY ("environment_id", "name")
);

-- Environment-scoped secrets live in the one secret table (same envelope, same broker): scope
-- `env:<environment_id>`, and the broker reads them only for a deploy run of that environment.
ALTER TABLE "secret" ADD COLUMN "environment_id" UUID REFERENCES "environment"("id");
ALTER TABLE "secret" DROP CONSTRAINT "secret_scope_matches_repo";
ALTER TABLE "secret" ADD CONSTRAINT "secret_scope_matches_target" CHECK (
    ("repo_id" IS NULL AND "environment_id" IS NULL AND "scope" = 'org')
    OR ("repo_id" IS NOT NULL AND "environment_id" IS NULL AND "scope" = 'repo:' || "repo_id"::text)
    OR ("repo_id" IS NOT NULL AND "environment_id" IS NOT NULL AND "scope" = 'env:' || "environment_id"::text));

-- One deployment per pointer move of an environment with a deploy workflow (the consumer's
-- idempotency key). waiting: the lock is held by another; superseded: a later move came first.
CREATE TABLE "deployment" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "repo_id" UUID NOT NULL REFERENCES "repo"("id"),
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "promotion_id" UUID NOT NULL REFERENCES "promotion"("id"),
    "pointer_seq" BIGINT NOT NULL,
    "generation_id" UUID NOT NULL REFERENCES "artifact_generation"("id"),
    "digest" TEXT NOT NULL CHECK ("digest" ~ '^[0-9a-f]{64}$'),
    "commit_sha" TEXT NOT NULL,
    "workflow_path" TEXT NOT NULL,
    "run_id" UUID REFERENCES "workflow_run"("id"),
    "state" TEXT NOT NULL CHECK ("state" IN ('waiting','running','succeeded','failed','superseded')),
    "actor" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMPTZ(3),
    "finished_at" TIMESTAMPTZ(3),
    CONSTRAINT "deployment_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "deployment_env_seq_key" UNIQUE ("environment_id", "pointer_seq"),
    CONSTRAINT "deployment_run_when_started" CHECK (("run_id" IS NULL) = ("state" IN ('waiting','superseded'))),
    CONSTRAINT "deployment_finished" CHECK (("finished_at" IS NULL) = ("state" IN ('waiting','running')))
);
CREATE INDEX "deployment_env_created_idx" ON "deployment" ("environment_id", "created_at" DESC);
CREATE UNIQUE INDEX "deployment_run_key" ON "deployment" ("run_id") WHERE "run_id" IS NOT NULL;

-- The deployment lock: one row per holding, at most one unreleased per environment (the partial
-- unique index is the mutual exclusion). Holder: the deploy run, and the attempt last claimed for it.
-- release_after: when the kill bound of a silent attempt passes; manual_release: no proof of death
-- can exist (a host Kiln does not control), an admin must release and the dashboard says so.
CREATE TABLE "deployment_lock" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "deployment_id" UUID NOT NULL REFERENCES "deployment"("id"),
    "run_id" UUID NOT NULL REFERENCES "workflow_run"("id"),
    "job_id" UUID REFERENCES "job_run"("id"),
    "attempt_id" UUID REFERENCES "attempt"("id"),
    "epoch" INTEGER,
    "acquired_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "release_after" TIMESTAMPTZ(3),
    "manual_release" BOOLEAN NOT NULL DEFAULT false,
    "released_at" TIMESTAMPTZ(3),
    "release_reason" TEXT CHECK ("release_reason" IN ('attempts_stopped','kill_bound_elapsed','manual')),
    "released_by" TEXT,
    CONSTRAINT "deployment_lock_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "deployment_lock_released" CHECK (("released_at" IS NULL) = ("release_reason" IS NULL)),
    CONSTRAINT "deployment_lock_manual_by" CHECK ("release_reason" IS DISTINCT FROM 'manual' OR "released_by" IS NOT NULL)
);
CREATE UNIQUE INDEX "deployment_lock_held_key" ON "deployment_lock" ("environment_id") WHERE "released_at" IS NULL;
-- The claim records the holder attempt by run (one probe per claim, only held locks are indexed).
CREATE INDEX "deployment_lock_held_run_idx" ON "deployment_lock" ("run_id") WHERE "released_at" IS NULL;
CREATE INDEX "deployment_lock_env_idx" ON "deployment_lock" ("environment_id", "acquired_at" DESC);
