-- Crypto-shredding (issue 21, docs/adr/0037-crypto-shredding.md). Artifacts and archived log
-- segments are sealed under a data key per org, UTC day, data kind and retention class. A data key
-- row holds the key only double-wrapped: under the org's secrets DEK (itself under the KEK file,
-- ADR 0025) and then under the platform key of its due day, which lives in KILN_SHRED_KEY_DIR and
-- never in this database. At the due instant the rows and the day key file are destroyed.

CREATE TABLE "shred_data_key" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "kind" TEXT NOT NULL,
    "class" TEXT NOT NULL,
    -- The platform key's id: data keys due at the same instant share it.
    "due_day" DATE NOT NULL,
    "window_days" INTEGER NOT NULL,
    "wrapped" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "shred_data_key_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "shred_data_key_org_fkey" FOREIGN KEY ("org_id") REFERENCES "org"("id") ON DELETE CASCADE,
    CONSTRAINT "shred_data_key_kind_check" CHECK ("kind" IN ('artifact', 'log')),
    CONSTRAINT "shred_data_key_class_check" CHECK ("class" IN ('release', 'default_branch', 'other')),
    CONSTRAINT "shred_data_key_due_check" CHECK ("due_day" > "day" AND "window_days" >= 0)
);
CREATE UNIQUE INDEX "shred_data_key_scope_key" ON "shred_data_key"("org_id", "day", "kind", "class");
CREATE INDEX "shred_data_key_due_idx" ON "shred_data_key"("due_day");

-- Every object sealed under a data key: what the deletion sampler probes once the key is gone.
-- No foreign key to shred_data_key on purpose: the record outlives the key it names.
CREATE TABLE "shred_object" (
    "object_key" TEXT NOT NULL,
    "org_id" UUID NOT NULL,
    "key_id" UUID NOT NULL,
    "kind" TEXT NOT NULL,
    -- The attempt (log segment) or artifact generation the object belongs to.
    "subject_id" UUID NOT NULL,
    "due_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "shred_object_pkey" PRIMARY KEY ("object_key"),
    CONSTRAINT "shred_object_kind_check" CHECK ("kind" IN ('artifact', 'log'))
);
CREATE INDEX "shred_object_key_idx" ON "shred_object"("key_id");
CREATE INDEX "shred_object_due_idx" ON "shred_object"("due_at");

-- Deletion evidence: one row per destroyed key (a data key row or a platform day key), append-only.
CREATE TABLE "shred_destruction" (
    "seq" BIGSERIAL NOT NULL,
    "key_kind" TEXT NOT NULL,
    "key_id" TEXT NOT NULL,
    "org_id" UUID,
    "day" DATE,
    "kind" TEXT,
    "class" TEXT,
    "due_at" TIMESTAMPTZ(3) NOT NULL,
    "destroyed_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "shred_destruction_pkey" PRIMARY KEY ("seq"),
    CONSTRAINT "shred_destruction_key_kind_check" CHECK ("key_kind" IN ('data_key', 'platform_key')),
    CONSTRAINT "shred_destruction_on_time_check" CHECK ("destroyed_at" >= "due_at")
);
-- A second run of the destroyer finds the evidence already written and adds nothing.
CREATE UNIQUE INDEX "shred_destruction_key_key" ON "shred_destruction"("key_kind", "key_id");
CREATE INDEX "shred_destruction_org_idx" ON "shred_destruction"("org_id", "seq");

CREATE FUNCTION "shred_destruction_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'shred_destruction is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER "shred_destruction_no_update_delete" BEFORE UPDATE OR DELETE ON "shred_destruction"
  FOR EACH ROW EXECUTE FUNCTION "shred_destruction_append_only"();
CREATE TRIGGER "shred_destruction_no_truncate" BEFORE TRUNCATE ON "shred_destruction"
  FOR EACH STATEMENT EXECUTE FUNCTION "shred_destruction_append_only"();

-- The deletion sampler's findings: one row per object, read path and round. The org home alerts on
-- every (object, path) whose latest sample is a leak.
CREATE TABLE "shred_sample" (
    "seq" BIGSERIAL NOT NULL,
    "round_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "object_key" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "outcome" TEXT NOT NULL,
    "detail" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "shred_sample_pkey" PRIMARY KEY ("seq"),
    CONSTRAINT "shred_sample_path_check" CHECK ("path" IN ('api_download', 'raw_log', 'log_stream', 'object_get')),
    CONSTRAINT "shred_sample_outcome_check" CHECK ("outcome" IN ('unreadable', 'leak'))
);
CREATE UNIQUE INDEX "shred_sample_round_key" ON "shred_sample"("round_id", "object_key", "path");
CREATE INDEX "shred_sample_latest_idx" ON "shred_sample"("org_id", "object_key", "path", "seq" DESC);
