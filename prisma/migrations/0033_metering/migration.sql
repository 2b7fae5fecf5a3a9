-- Metering (issue 33 item 3, docs/adr/0045): one append-only usage row per finished attempt, written
-- in the transaction that ends the attempt; per-org monthly minute quotas counted in a sharded tally
-- (no hot row per org, ADR 0042) and warned about once per threshold per month.

-- Minutes an org may use per calendar month (UTC) on platform pools; NULL = unlimited.
ALTER TABLE "org" ADD COLUMN "minute_quota" INTEGER CHECK ("minute_quota" IS NULL OR "minute_quota" >= 0);
-- Only the orgs with a quota are looked at by the dispatch view's quota filter.
CREATE INDEX "org_minute_quota_idx" ON "org" ("id") WHERE "minute_quota" IS NOT NULL;

CREATE TABLE "usage_event" (
    "seq" BIGSERIAL NOT NULL,
    "attempt_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "repo_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "pool" TEXT NOT NULL,
    "size" TEXT NOT NULL,
    "isolation" TEXT NOT NULL,
    "trust_class" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "cause" TEXT,
    -- Whole seconds from claim to stop, rounded up (a started second is used).
    "seconds" INTEGER NOT NULL CHECK ("seconds" >= 0),
    "interruptible" BOOLEAN NOT NULL,
    -- An org-owned pool's host (self-hosted): metered and shown, never counted against the quota.
    "self_hosted" BOOLEAN NOT NULL,
    -- False for platform failures (reclaimed and preempted attempts included).
    "billable" BOOLEAN NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL,
    "finished_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "usage_event_pkey" PRIMARY KEY ("seq"),
    -- An attempt ends once: a second row for it is a bug, refused here.
    CONSTRAINT "usage_event_attempt_id_key" UNIQUE ("attempt_id")
);
CREATE INDEX "usage_event_org_finished_idx" ON "usage_event" ("org_id", "finished_at");

CREATE FUNCTION "usage_event_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'usage_event is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER "usage_event_no_update_delete" BEFORE UPDATE OR DELETE ON "usage_event"
  FOR EACH ROW EXECUTE FUNCTION "usage_event_append_only"();
CREATE TRIGGER "usage_event_no_truncate" BEFORE TRUNCATE ON "usage_event"
  FOR EACH STATEMENT EXECUTE FUNCTION "usage_event_append_only"();

-- The month's quota-counted seconds per org, split over 16 shards picked by attempt id, so that two
-- completions of one org rarely wait on the same row lock (ADR 0045). The sum of an org's shards is
-- its month's total.
CREATE TABLE "org_minute_tally" (
    "org_id" UUID NOT NULL,
    "month" DATE NOT NULL,
    "shard" SMALLINT NOT NULL CHECK ("shard" >= 0 AND "shard" < 16),
    "seconds" BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT "org_minute_tally_pkey" PRIMARY KEY ("org_id", "month", "shard")
);

-- A quota warning given (80 or 100 percent): once per org, month and threshold.
CREATE TABLE "quota_notice" (
    "org_id" UUID NOT NULL,
    "month" DATE NOT NULL,
    "threshold" SMALLINT NOT NULL CHECK ("threshold" IN (80, 100)),
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "quota_notice_pkey" PRIMARY KEY ("org_id", "month", "threshold")
);
