-- Fair dispatch (issue 9): tiers, entitlements, the guarded per-org concurrency counter, audit.
ALTER TABLE "job_run" ADD COLUMN "tier" TEXT NOT NULL DEFAULT 'interactive';
ALTER TABLE "job_run" ADD COLUMN "wait_reason" TEXT;
ALTER TABLE "job_run" ADD CONSTRAINT "job_run_tier_check" CHECK ("tier" IN ('interactive','scheduled','background'));
ALTER TABLE "attempt" ADD COLUMN "preempt_requested" BOOLEAN NOT NULL DEFAULT false;
ALTER TABLE "attempt" ADD COLUMN "pool" TEXT NOT NULL DEFAULT 'default';

CREATE TABLE "entitlement" (
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "pool" TEXT NOT NULL,
    "slots" INTEGER NOT NULL CHECK ("slots" >= 0),
    "weight" INTEGER NOT NULL CHECK ("weight" >= 1),
    "hard_cap" INTEGER CHECK ("hard_cap" IS NULL OR "hard_cap" >= 0),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "entitlement_pkey" PRIMARY KEY ("org_id", "pool")
);

CREATE TABLE "org_pool_usage" (
    "org_id" UUID NOT NULL,
    "pool" TEXT NOT NULL,
    -- Never negative: a double release would be a bug the database refuses.
    "running" INTEGER NOT NULL DEFAULT 0 CHECK ("running" >= 0),
    CONSTRAINT "org_pool_usage_pkey" PRIMARY KEY ("org_id", "pool")
);

CREATE TABLE "entitlement_change" (
    "id" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL,
    "pool" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "before" JSONB,
    "after" JSONB NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "entitlement_change_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "entitlement_change_org_id_at_idx" ON "entitlement_change"("org_id", "at");

-- Attempts already running when this migration applies hold slots too.
INSERT INTO "org_pool_usage" ("org_id", "pool", "running")
SELECT a."org_id", j."pool", count(*) FROM "attempt" a JOIN "job_run" j ON j."id" = a."job_id"
WHERE a."status" = 'running' GROUP BY a."org_id", j."pool";
UPDATE "attempt" a SET "pool" = j."pool" FROM "job_run" j WHERE j."id" = a."job_id";

-- Candidate selection scans READY jobs per pool and org.
CREATE INDEX "job_run_ready_org_idx" ON "job_run" ("pool", "org_id", "ready_at") WHERE "status" = 'ready';
CREATE INDEX "attempt_running_pool_idx" ON "attempt" ("pool", "org_id") WHERE "status" = 'running';
