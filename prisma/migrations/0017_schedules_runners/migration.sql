-- Schedules and runner selection (issue 20, docs/adr/0031-schedules-and-runner-selection.md).

-- A repository's schedules: from the workflow file on the default branch (origin 'workflow', replaced
-- by each later default-branch freeze) or added by a member through the API, CLI or dashboard
-- (origin 'api'). The forward walk of cron slots starts at last_slot_at, or created_at before the
-- first slot: every worker computes the same next slot from this one row.
CREATE TABLE "schedule" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id") ON DELETE CASCADE,
    "repo_id" UUID NOT NULL REFERENCES "repo"("id") ON DELETE CASCADE,
    "cron" TEXT NOT NULL CHECK (length("cron") BETWEEN 1 AND 100),
    "timezone" TEXT NOT NULL CHECK (length("timezone") BETWEEN 1 AND 64),
    "origin" TEXT NOT NULL CHECK ("origin" IN ('workflow', 'api')),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_slot_at" TIMESTAMPTZ(3),
    CONSTRAINT "schedule_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "schedule_repo_origin_cron_tz_key" UNIQUE ("repo_id", "origin", "cron", "timezone")
);
CREATE INDEX "schedule_org_id_idx" ON "schedule"("org_id");

-- One row per admitted slot. The primary key is the dedupe: however many workers compute the same
-- slot, whatever restarts happen between computing and committing, one insert wins and the run is
-- created in the same statement only by the winner.
CREATE TABLE "schedule_slot" (
    "schedule_id" UUID NOT NULL REFERENCES "schedule"("id") ON DELETE CASCADE,
    "slot_at" TIMESTAMPTZ(3) NOT NULL,
    "org_id" UUID NOT NULL,
    "run_id" UUID REFERENCES "workflow_run"("id") ON DELETE SET NULL,
    "commit_sha" TEXT NOT NULL,
    "admitted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "schedule_slot_pkey" PRIMARY KEY ("schedule_id", "slot_at")
);

-- Which default-branch run recorded the workflow's schedules: an older commit frozen late never
-- replaces a newer commit's (runs are ordered by admission).
ALTER TABLE "repo" ADD COLUMN "schedules_recorded_at" TIMESTAMPTZ(3);

-- Runner selection: a job's runs_on labels and size, copied from the frozen definition so that the
-- claim filters candidates with an index-friendly predicate instead of reading JSON per row.
ALTER TABLE "job_run"
    ADD COLUMN "runner_labels" TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN "runner_size" TEXT NOT NULL DEFAULT 'small' CHECK ("runner_size" IN ('small', 'medium', 'large'));

-- What a session's agent advertised (KILN_AGENT_LABELS, KILN_AGENT_SIZES). Sessions from agents
-- that predate sizes serve small jobs without labels, which is what they always ran.
ALTER TABLE "agent_session"
    ADD COLUMN "runner_labels" TEXT[] NOT NULL DEFAULT '{}',
    ADD COLUMN "sizes" TEXT[] NOT NULL DEFAULT '{small}';
