-- Retention by provenance (issue 21, docs/adr/0036-retention-by-provenance.md). A retention class
-- (release | default_branch | other, RETENTION_CLASSES in @kiln/domain) and an expiry are written on
-- artifact generations, archived log segments (and their log) and runs when they are sealed, from the
-- run's trigger and ref; the retention worker evicts what expired unless an environment pointer, its
-- history, a hold or a live run still needs it. Rows written before this migration have no class:
-- they are never evicted until classified (the ADR says why).

-- Which refs are releases, besides tags: globs over refs (release/*, refs/heads/hotfix/**).
ALTER TABLE "repo" ADD COLUMN "release_patterns" TEXT[] NOT NULL DEFAULT '{}';

ALTER TABLE "artifact_generation"
    ADD COLUMN "retention_class" TEXT CHECK ("retention_class" IN ('release','default_branch','other')),
    ADD COLUMN "expires_at" TIMESTAMPTZ(3),
    -- Set by the retention worker when it evicts the generation (its object is deleted after).
    ADD COLUMN "expired_at" TIMESTAMPTZ(3),
    ADD CONSTRAINT "artifact_generation_retention_check" CHECK (("retention_class" IS NULL) = ("expires_at" IS NULL)),
    ADD CONSTRAINT "artifact_generation_expired_check" CHECK ("expired_at" IS NULL OR "expires_at" IS NOT NULL);
-- A binding whose generation was evicted: it still names what the job produced, but nothing can
-- be downloaded through it (ARTIFACT.EXPIRED).
ALTER TABLE "artifact_binding" ADD COLUMN "expired_at" TIMESTAMPTZ(3);

ALTER TABLE "log_attempt"
    ADD COLUMN "retention_class" TEXT CHECK ("retention_class" IN ('release','default_branch','other')),
    ADD COLUMN "expires_at" TIMESTAMPTZ(3),
    ADD COLUMN "expired_at" TIMESTAMPTZ(3),
    ADD CONSTRAINT "log_attempt_retention_check" CHECK (("retention_class" IS NULL) = ("expires_at" IS NULL)),
    ADD CONSTRAINT "log_attempt_expired_check" CHECK ("expired_at" IS NULL OR "expires_at" IS NOT NULL);
ALTER TABLE "log_segment"
    ADD COLUMN "retention_class" TEXT CHECK ("retention_class" IN ('release','default_branch','other')),
    ADD COLUMN "expires_at" TIMESTAMPTZ(3),
    ADD CONSTRAINT "log_segment_retention_check" CHECK (("retention_class" IS NULL) = ("expires_at" IS NULL));

ALTER TABLE "workflow_run"
    ADD COLUMN "retention_class" TEXT CHECK ("retention_class" IN ('release','default_branch','other')),
    ADD COLUMN "expires_at" TIMESTAMPTZ(3),
    ADD COLUMN "expired_at" TIMESTAMPTZ(3),
    ADD CONSTRAINT "workflow_run_retention_check" CHECK (("retention_class" IS NULL) = ("expires_at" IS NULL)),
    ADD CONSTRAINT "workflow_run_expired_check" CHECK ("expired_at" IS NULL OR "expires_at" IS NOT NULL);

-- The worker's scans: live items by expiry.
CREATE INDEX "artifact_generation_expiry_idx" ON "artifact_generation" ("expires_at") WHERE "expired_at" IS NULL AND "expires_at" IS NOT NULL;
CREATE INDEX "artifact_generation_unswept_idx" ON "artifact_generation" ("expired_at") WHERE "expired_at" IS NOT NULL AND "object_deleted_at" IS NULL;
CREATE INDEX "log_attempt_expiry_idx" ON "log_attempt" ("expires_at") WHERE "expired_at" IS NULL AND "expires_at" IS NOT NULL;
CREATE INDEX "log_attempt_run_idx" ON "log_attempt" ("run_id");
CREATE INDEX "workflow_run_expiry_idx" ON "workflow_run" ("expires_at") WHERE "expired_at" IS NULL AND "expires_at" IS NOT NULL;
CREATE INDEX "workflow_run_unstamped_idx" ON "workflow_run" ("finished_at") WHERE "expires_at" IS NULL AND "finished_at" IS NOT NULL;
CREATE INDEX "environment_current_generation_idx" ON "environment" ("current_generation_id") WHERE "current_generation_id" IS NOT NULL;
CREATE INDEX "environment_pointer_move_from_generation_idx" ON "environment_pointer_move" ("from_generation_id") WHERE "from_generation_id" IS NOT NULL;
CREATE INDEX "promotion_generation_idx" ON "promotion" ("generation_id");

-- An org's shortened windows. Never longer than the platform's: the engine refuses that
-- (RETENTION.WINDOW_LENGTHENED) and applies min(override, platform) again when reading.
CREATE TABLE "org_retention_window" (
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "kind" TEXT NOT NULL CHECK ("kind" IN ('artifact','log','log_searchable','run_metadata')),
    "class" TEXT NOT NULL CHECK ("class" IN ('release','default_branch','other')),
    "days" INTEGER NOT NULL CHECK ("days" BETWEEN 1 AND 2557),
    "set_by" TEXT NOT NULL,
    "set_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "org_retention_window_pkey" PRIMARY KEY ("org_id", "kind", "class")
);

-- Holds: an admin or auditor keeps one artifact past its expiry, with a reason. Removing a hold
-- keeps the row (who, when): the list shows history, the audit trail has both events.
CREATE TABLE "retention_hold" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "generation_id" UUID NOT NULL REFERENCES "artifact_generation"("id"),
    "reason" TEXT NOT NULL CHECK (length("reason") BETWEEN 1 AND 2000),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "removed_by" TEXT,
    "removed_at" TIMESTAMPTZ(3),
    CONSTRAINT "retention_hold_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "retention_hold_removed_check" CHECK (("removed_by" IS NULL) = ("removed_at" IS NULL))
);
-- At most one active hold per artifact.
CREATE UNIQUE INDEX "retention_hold_active_key" ON "retention_hold" ("generation_id") WHERE "removed_at" IS NULL;
CREATE INDEX "retention_hold_org_idx" ON "retention_hold" ("org_id", "created_at" DESC);
