-- Mediated egress (issue 3, docs/adr/0013-mediated-egress.md): the org's allow-list, its audit
-- trail, and every destination a sandbox asked for (allowed or denied) against run, job and attempt.
CREATE TABLE "egress_rule" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    -- Canonical text (lowercase, no trailing dot): "host", "*.suffix", either with ":port".
    "pattern" TEXT NOT NULL CHECK (length("pattern") BETWEEN 1 AND 300),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "egress_rule_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "egress_rule_org_id_pattern_key" ON "egress_rule"("org_id", "pattern");

CREATE TABLE "egress_rule_change" (
    "id" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL,
    "pattern" TEXT NOT NULL,
    "action" TEXT NOT NULL CHECK ("action" IN ('allow','remove')),
    "actor" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "egress_rule_change_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "egress_rule_change_org_id_at_idx" ON "egress_rule_change"("org_id", "at");

CREATE TABLE "egress_event" (
    "id" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "attempt_id" UUID NOT NULL,
    "epoch" INTEGER NOT NULL,
    "host" TEXT NOT NULL,
    "port" INTEGER NOT NULL CHECK ("port" BETWEEN 0 AND 65535),
    "decision" TEXT NOT NULL CHECK ("decision" IN ('allowed','denied')),
    "reason" TEXT NOT NULL,
    -- Identical destinations within one report are folded into one row.
    "count" INTEGER NOT NULL DEFAULT 1 CHECK ("count" >= 1),
    -- The agent's report batch and position in it: a retried report inserts nothing twice.
    "batch_seq" INTEGER NOT NULL,
    "item" INTEGER NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "recorded_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "egress_event_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "egress_event_attempt_id_batch_seq_item_key" ON "egress_event"("attempt_id", "batch_seq", "item");
CREATE INDEX "egress_event_run_id_at_idx" ON "egress_event"("run_id", "at");
