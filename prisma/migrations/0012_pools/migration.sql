-- Pools with an isolation class and a tenancy (issue 15, docs/adr/0022-placement-and-pool-tenancy.md).
-- A pool without a row here is read as the strictest useful default (shared, microVM hosts only,
-- untrusted runs admitted on microVMs): see defaultPoolPolicy in packages/domain.
CREATE TABLE "pool" (
    "name" TEXT NOT NULL CHECK ("name" ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    "min_isolation" TEXT NOT NULL DEFAULT 'microvm' CHECK ("min_isolation" IN ('process','microvm')),
    "admits_untrusted" BOOLEAN NOT NULL DEFAULT true,
    "untrusted_on_process" BOOLEAN NOT NULL DEFAULT false,
    -- Set when one org owns the pool: only its jobs are placed there.
    "owner_org_id" UUID REFERENCES "org"("id"),
    -- A single operator's development pool: its process hosts may serve several orgs (all the operator's).
    "development" BOOLEAN NOT NULL DEFAULT false,
    "updated_by" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "pool_pkey" PRIMARY KEY ("name"),
    -- A shared pool never runs untrusted work on process isolation, whoever writes the row.
    CONSTRAINT "pool_untrusted_on_process_not_shared"
      CHECK (NOT "untrusted_on_process" OR "owner_org_id" IS NOT NULL OR "development"),
    CONSTRAINT "pool_untrusted_on_process_needs_untrusted" CHECK (NOT "untrusted_on_process" OR "admits_untrusted")
);

-- Every change of a pool's policy, with who made it and the policy before and after.
CREATE TABLE "pool_change" (
    "id" BIGSERIAL NOT NULL,
    "pool" TEXT NOT NULL,
    "actor" TEXT NOT NULL,
    "before" JSONB,
    "after" JSONB NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "pool_change_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "pool_change_pool_at_idx" ON "pool_change"("pool", "at");
