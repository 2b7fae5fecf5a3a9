-- Environments, gate policies, promotions, approvals, overrides and the pointer history (issue 18,
-- docs/adr/0032-environments-gates-promotions.md). One artifact digest is built once and promoted
-- unchanged: an environment holds a pointer to one artifact generation (its digest and the
-- attestation it was promoted with), and a promotion moves that pointer only after the decision
-- service (packages/domain/src/environments, packages/engine/src/environments) allowed it. The
-- deployment lock and the deploy run (environment.lock_*, deploy columns) are migration 0019's.

-- A personal API token acts as one member (`kiln token create <org> --member <login>`): approvals
-- and promotion requests made with it are that member's. Its effective role is the member's
-- current role, read at authentication, so removing or demoting the member takes effect at once.
ALTER TABLE "api_token" ADD COLUMN "user_id" UUID REFERENCES "app_user"("id");
CREATE INDEX "api_token_user_idx" ON "api_token" ("user_id") WHERE "user_id" IS NOT NULL;

CREATE TABLE "environment" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "repo_id" UUID NOT NULL REFERENCES "repo"("id"),
    "name" TEXT NOT NULL CHECK ("name" ~ '^[a-z0-9][a-z0-9._-]{0,62}$'),
    -- The promotion order: an environment's gate "previous environment" is the one it comes after.
    "after_id" UUID REFERENCES "environment"("id"),
    "position" INTEGER NOT NULL CHECK ("position" >= 0),
    -- Production (named so or marked) always fails closed; the CHECKs below make that structural.
    "production" BOOLEAN NOT NULL DEFAULT false,
    "fail_mode" TEXT NOT NULL DEFAULT 'closed' CHECK ("fail_mode" IN ('closed','open')),
    -- The policy version decisions are made under now (environment_policy, deferred FK below).
    "policy_version" INTEGER NOT NULL CHECK ("policy_version" >= 1),
    -- The pointer: what the environment runs. All four or none.
    "current_generation_id" UUID REFERENCES "artifact_generation"("id"),
    "current_digest" TEXT CHECK ("current_digest" ~ '^[0-9a-f]{64}$'),
    "current_attestation_id" UUID REFERENCES "attestation"("id"),
    "current_promotion_id" UUID,
    "pointer_moved_at" TIMESTAMPTZ(3),
    -- Bumped by every move: a guarded update on it is what serialises two promotions' moves.
    "pointer_seq" BIGINT NOT NULL DEFAULT 0,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "environment_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "environment_repo_name_key" UNIQUE ("repo_id", "name"),
    CONSTRAINT "environment_not_after_itself" CHECK ("after_id" IS DISTINCT FROM "id"),
    CONSTRAINT "environment_production_named" CHECK ("name" <> 'production' OR "production"),
    CONSTRAINT "environment_production_fails_closed" CHECK (NOT "production" OR "fail_mode" = 'closed'),
    CONSTRAINT "environment_pointer_whole" CHECK (
      ("current_generation_id" IS NULL) = ("current_digest" IS NULL)
      AND ("current_generation_id" IS NULL) = ("current_promotion_id" IS NULL)
      AND ("current_generation_id" IS NULL) = ("pointer_moved_at" IS NULL))
);
CREATE INDEX "environment_org_idx" ON "environment" ("org_id");
CREATE INDEX "environment_repo_position_idx" ON "environment" ("repo_id", "position");

-- Every policy change is a new immutable version, set by an org admin and audited. The decision
-- service reads only these rows: never the workflow file the gated author edits (seed 002).
CREATE TABLE "environment_policy" (
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "version" INTEGER NOT NULL CHECK ("version" >= 1),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    -- The policy document (packages/domain/src/environments/policy-schema.ts), validated on write.
    "policy" JSONB NOT NULL,
    "created_by" TEXT NOT NULL,
    "comment" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "environment_policy_pkey" PRIMARY KEY ("environment_id", "version")
);
CREATE FUNCTION "environment_policy_immutable"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'environment_policy versions are immutable (% refused)', TG_OP USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER "environment_policy_immutable" BEFORE UPDATE OR DELETE ON "environment_policy"
    FOR EACH ROW EXECUTE FUNCTION "environment_policy_immutable"();
-- An environment and its first policy are inserted in one transaction, so the check waits for commit.
ALTER TABLE "environment" ADD CONSTRAINT "environment_policy_version_fkey"
    FOREIGN KEY ("id", "policy_version") REFERENCES "environment_policy"("environment_id", "version")
    DEFERRABLE INITIALLY DEFERRED;

CREATE TABLE "promotion" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "repo_id" UUID NOT NULL REFERENCES "repo"("id"),
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "kind" TEXT NOT NULL CHECK ("kind" IN ('promote','rollback')),
    -- The requesting member (a dashboard session or a personal token); null for an org token,
    -- which separation of duties then treats as nobody in particular (it cannot approve either).
    "requester_user_id" UUID REFERENCES "app_user"("id"),
    "requested_by" TEXT NOT NULL,
    "reason" TEXT NOT NULL CHECK (length("reason") BETWEEN 1 AND 2000),
    -- What is promoted: one sealed generation, by digest, with the run and job that produced it.
    "generation_id" UUID NOT NULL REFERENCES "artifact_generation"("id"),
    "digest" TEXT NOT NULL CHECK ("digest" ~ '^[0-9a-f]{64}$'),
    "attestation_id" UUID REFERENCES "attestation"("id"),
    "run_id" UUID NOT NULL REFERENCES "workflow_run"("id"),
    "job_id" UUID NOT NULL REFERENCES "job_run"("id"),
    "artifact_name" TEXT NOT NULL,
    -- The pointer when the promotion was requested (what a rollback moves away from).
    "from_digest" TEXT,
    -- pending: waiting for approvals or an override; denied / rejected: final, nothing moved;
    -- promoted: the pointer moved; deploying / deployed / deploy_failed: the deploy run (0019's).
    "state" TEXT NOT NULL CHECK ("state" IN ('pending','denied','rejected','promoted','deploying','deployed','deploy_failed')),
    -- The latest decision (every decision is also in the audit trail and the event log).
    "verdict" TEXT NOT NULL CHECK ("verdict" IN ('allow','deny','override_required')),
    "reasons" JSONB NOT NULL DEFAULT '[]',
    "fail_mode" TEXT NOT NULL CHECK ("fail_mode" IN ('closed','open')),
    "policy_version" INTEGER NOT NULL,
    "decided_at" TIMESTAMPTZ(3) NOT NULL,
    "override_id" UUID,
    "promoted_at" TIMESTAMPTZ(3),
    "version" INTEGER NOT NULL DEFAULT 0,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "promotion_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "promotion_policy_fkey" FOREIGN KEY ("environment_id", "policy_version")
        REFERENCES "environment_policy"("environment_id", "version"),
    CONSTRAINT "promotion_moved_when_promoted" CHECK (
      ("promoted_at" IS NOT NULL) = ("state" IN ('promoted','deploying','deployed','deploy_failed')))
);
CREATE INDEX "promotion_env_created_idx" ON "promotion" ("environment_id", "created_at" DESC);
-- The approvals inbox: an org's pending promotions.
CREATE INDEX "promotion_org_pending_idx" ON "promotion" ("org_id", "created_at") WHERE "state" = 'pending';
ALTER TABLE "environment" ADD CONSTRAINT "environment_current_promotion_fkey"
    FOREIGN KEY ("current_promotion_id") REFERENCES "promotion"("id");

CREATE TABLE "promotion_approval" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "promotion_id" UUID NOT NULL REFERENCES "promotion"("id"),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "user_id" UUID NOT NULL REFERENCES "app_user"("id"),
    "decision" TEXT NOT NULL CHECK ("decision" IN ('approve','reject')),
    "comment" TEXT CHECK ("comment" IS NULL OR length("comment") <= 2000),
    "actor" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "promotion_approval_pkey" PRIMARY KEY ("id"),
    -- One say per member per promotion: an approval counts once.
    CONSTRAINT "promotion_approval_member_key" UNIQUE ("promotion_id", "user_id")
);

-- Break glass: an admin's recorded override of the gates a promotion failed, with a reason and an
-- expiry; with a second admin's co-signature when the policy requires one. Kept forever.
CREATE TABLE "promotion_override" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "promotion_id" UUID NOT NULL REFERENCES "promotion"("id"),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "actor_user_id" UUID REFERENCES "app_user"("id"),
    "actor" TEXT NOT NULL,
    "reason" TEXT NOT NULL CHECK (length("reason") BETWEEN 1 AND 2000),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    -- The gates (kinds) this override set aside, as they failed when it was recorded.
    "gates" JSONB NOT NULL,
    "second_approver_required" BOOLEAN NOT NULL,
    "second_approver_user_id" UUID REFERENCES "app_user"("id"),
    "second_actor" TEXT,
    "second_approved_at" TIMESTAMPTZ(3),
    -- pending: waiting for the second approver; applied: the promotion went through with it.
    "state" TEXT NOT NULL CHECK ("state" IN ('pending','applied')),
    "applied_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "promotion_override_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "promotion_override_expiry" CHECK ("expires_at" > "created_at"),
    CONSTRAINT "promotion_override_second_distinct" CHECK (
      "second_approver_user_id" IS NULL OR "second_approver_user_id" IS DISTINCT FROM "actor_user_id"),
    CONSTRAINT "promotion_override_applied" CHECK (("state" = 'applied') = ("applied_at" IS NOT NULL))
);
CREATE INDEX "promotion_override_promotion_idx" ON "promotion_override" ("promotion_id");
-- The org home lists override use.
CREATE INDEX "promotion_override_org_idx" ON "promotion_override" ("org_id", "created_at" DESC);
ALTER TABLE "promotion" ADD CONSTRAINT "promotion_override_fkey"
    FOREIGN KEY ("override_id") REFERENCES "promotion_override"("id");

-- Every pointer move, in order: the deployment history, and the digests a rollback may target.
-- Append-only; retention keeps every generation named here (nothing a pointer held is evicted).
CREATE TABLE "environment_pointer_move" (
    "seq" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "environment_id" UUID NOT NULL REFERENCES "environment"("id"),
    "promotion_id" UUID NOT NULL REFERENCES "promotion"("id"),
    "kind" TEXT NOT NULL CHECK ("kind" IN ('promote','rollback')),
    "from_generation_id" UUID REFERENCES "artifact_generation"("id"),
    "from_digest" TEXT,
    "to_generation_id" UUID NOT NULL REFERENCES "artifact_generation"("id"),
    "to_digest" TEXT NOT NULL CHECK ("to_digest" ~ '^[0-9a-f]{64}$'),
    "to_attestation_id" UUID REFERENCES "attestation"("id"),
    "pointer_seq" BIGINT NOT NULL,
    "actor" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "environment_pointer_move_pkey" PRIMARY KEY ("seq"),
    CONSTRAINT "environment_pointer_move_env_seq_key" UNIQUE ("environment_id", "pointer_seq")
);
CREATE INDEX "environment_pointer_move_env_idx" ON "environment_pointer_move" ("environment_id", "seq" DESC);
-- "Has this digest been in the previous environment, and since when" (the soak gate).
CREATE INDEX "environment_pointer_move_digest_idx" ON "environment_pointer_move" ("environment_id", "to_digest");
CREATE INDEX "environment_pointer_move_generation_idx" ON "environment_pointer_move" ("to_generation_id");
CREATE FUNCTION "environment_pointer_move_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'environment_pointer_move is append-only (% refused)', TG_OP USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER "environment_pointer_move_append_only" BEFORE UPDATE OR DELETE ON "environment_pointer_move"
    FOR EACH ROW EXECUTE FUNCTION "environment_pointer_move_append_only"();
