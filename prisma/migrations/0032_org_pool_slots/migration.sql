-- Org caps without a hot row (issue 32, docs/adr/0042): the single guarded counter row per
-- (org, pool) that every claim and completion of an org updated is replaced by one row per slot of
-- the org's hard cap. A claim takes a free slot row (FOR UPDATE SKIP LOCKED, so racing claimers
-- take different rows) and names its attempt in it; the attempt's end frees that same row. The cap
-- is exact because a row holds at most one attempt and there are no more rows under the cap than
-- the cap. An org without a hard cap has no slot rows and writes nothing extra at claim or
-- completion. The running count every view showed is now derived from the running attempts.
CREATE TABLE "org_pool_slot" (
    "org_id" UUID NOT NULL,
    "pool" TEXT NOT NULL,
    "slot" INTEGER NOT NULL CHECK ("slot" >= 0),
    -- The running attempt holding this slot, or NULL when it is free.
    "attempt_id" UUID,
    CONSTRAINT "org_pool_slot_pkey" PRIMARY KEY ("org_id", "pool", "slot")
);
-- One slot per attempt at most, and the completion finds its slot by attempt.
CREATE UNIQUE INDEX "org_pool_slot_attempt_id_key" ON "org_pool_slot" ("attempt_id");

-- Attempts of capped orgs already running when this migration applies hold slots, numbered from 0;
-- then the free slots up to each cap. Holders numbered at or past the cap (an org already over a cap
-- lowered earlier) block new claims until they end, as the counter did.
INSERT INTO "org_pool_slot" ("org_id", "pool", "slot", "attempt_id")
SELECT a."org_id", a."pool", (row_number() OVER (PARTITION BY a."org_id", a."pool" ORDER BY a."id") - 1)::int, a."id"
FROM "attempt" a JOIN "entitlement" e ON e."org_id" = a."org_id" AND e."pool" = a."pool" AND e."hard_cap" IS NOT NULL
WHERE a."status" = 'running';
INSERT INTO "org_pool_slot" ("org_id", "pool", "slot")
SELECT e."org_id", e."pool", g.n FROM "entitlement" e, generate_series(0, e."hard_cap" - 1) AS g(n)
WHERE e."hard_cap" IS NOT NULL
ON CONFLICT DO NOTHING;

-- The old counter becomes a read-only view with the same columns, so readers keep their queries.
-- Running attempts are few and indexed ("attempt_running_pool_idx", partial on status = 'running').
DROP TABLE "org_pool_usage";
CREATE VIEW "org_pool_usage" AS
SELECT "org_id", "pool", count(*)::int AS "running" FROM "attempt" WHERE "status" = 'running' GROUP BY "org_id", "pool";
