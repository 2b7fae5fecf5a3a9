-- The fleet view and interruptible capacity (issue 22, docs/adr/0035-fleet-view-and-interruptible-capacity.md).

-- What each agent process reports about itself (POST /v1/agent/sessions/{id}/stats), on its session:
-- a session is one agent process, so the counters are that process's and start again at 0 with it.
-- (agent_version is 0020_runners' column; the stats report keeps it current too.)
ALTER TABLE "agent_session"
    ADD COLUMN "warm_pool_size" INTEGER CHECK ("warm_pool_size" IS NULL OR "warm_pool_size" >= 0),
    ADD COLUMN "warm_hits" BIGINT CHECK ("warm_hits" IS NULL OR "warm_hits" >= 0),
    ADD COLUMN "warm_misses" BIGINT CHECK ("warm_misses" IS NULL OR "warm_misses" >= 0),
    ADD COLUMN "slots_in_use" INTEGER CHECK ("slots_in_use" IS NULL OR "slots_in_use" >= 0),
    ADD COLUMN "stats_at" TIMESTAMPTZ(3),
    -- A reclaim notice from an operator (the cloud is taking the machine back); the agent reads it in
    -- its next stats answer and stops as if it had received SIGUSR2.
    ADD COLUMN "reclaim_requested_at" TIMESTAMPTZ(3),
    ADD COLUMN "reclaim_requested_by" TEXT,
    ADD CONSTRAINT "agent_session_reclaim_said"
      CHECK (("reclaim_requested_at" IS NULL) = ("reclaim_requested_by" IS NULL));

-- An interruptible pool's hosts draw background-tier jobs from the queue of the on-demand pool it
-- serves (`serves`); they never take anything else. A pool serving another is never itself served.
ALTER TABLE "pool"
    ADD COLUMN "interruptible" BOOLEAN NOT NULL DEFAULT false,
    -- No foreign key: the served pool may have no row of its own (the strict default policy applies).
    ADD COLUMN "serves" TEXT,
    ADD CONSTRAINT "pool_interruptible_serves" CHECK ("interruptible" = ("serves" IS NOT NULL)),
    ADD CONSTRAINT "pool_serves_other" CHECK ("serves" IS NULL OR "serves" <> "name");

-- A job whose attempt was reclaimed goes back to on-demand capacity only: interruptible hosts skip it.
ALTER TABLE "job_run" ADD COLUMN "interruptible_excluded" BOOLEAN NOT NULL DEFAULT false;

-- Set at claim from the session's pool row: the share report and the reclaim rule read the fact as it
-- was when the attempt ran, not the pool's flag today.
ALTER TABLE "attempt" ADD COLUMN "on_interruptible" BOOLEAN NOT NULL DEFAULT false;
-- The share report scans one pool's finished attempts over a window.
CREATE INDEX "attempt_pool_claimed_idx" ON "attempt"("pool", "claimed_at");
