-- Build caches (issue 8, docs/adr/0014-build-caches.md). An entry is one immutable uploaded blob
-- (fresh object key per upload). The binding is the conditional write that makes it the answer
-- for a key: first writer wins (INSERT .. ON CONFLICT DO NOTHING on the key), never overwritten.
-- A second writer with other bytes is kept as a conflict signal for admins.
ALTER TABLE "org" ADD COLUMN "cache_quota_bytes" BIGINT CHECK ("cache_quota_bytes" IS NULL OR "cache_quota_bytes" >= 0);

CREATE TABLE "cache_entry" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "repo_id" UUID NOT NULL REFERENCES "repo"("id"),
    "namespace" TEXT NOT NULL CHECK ("namespace" IN ('trusted')),
    "kind" TEXT NOT NULL CHECK ("kind" IN ('dependencies','directory')),
    "cache_key" TEXT NOT NULL CHECK ("cache_key" ~ '^[0-9a-f]{64}$'),
    "prefix_key" TEXT NOT NULL CHECK ("prefix_key" ~ '^[0-9a-f]{64}$'),
    "object_key" TEXT NOT NULL,
    "size_bytes" BIGINT NOT NULL CHECK ("size_bytes" >= 0),
    "sha256" TEXT NOT NULL CHECK ("sha256" ~ '^[0-9a-f]{64}$'),
    "unpacked_bytes" BIGINT NOT NULL CHECK ("unpacked_bytes" >= 0),
    "entry_count" INTEGER NOT NULL CHECK ("entry_count" >= 0),
    "state" TEXT NOT NULL CHECK ("state" IN ('uploading','bound','abandoned','evicted')),
    "abandon_reason" TEXT,
    -- The writer: a trusted attempt, fenced by its epoch at open and at bind.
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "attempt_id" UUID NOT NULL REFERENCES "attempt"("id"),
    "epoch" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "bound_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "evicted_at" TIMESTAMPTZ(3),
    "object_deleted_at" TIMESTAMPTZ(3),
    CONSTRAINT "cache_entry_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "cache_entry_object_key_key" ON "cache_entry"("object_key");
-- One upload per (attempt, key): a re-opened save resumes instead of piling up blobs.
CREATE UNIQUE INDEX "cache_entry_attempt_id_cache_key_key" ON "cache_entry"("attempt_id", "cache_key");
CREATE INDEX "cache_entry_state_last_used_at_idx" ON "cache_entry"("state", "last_used_at");
CREATE INDEX "cache_entry_org_id_state_idx" ON "cache_entry"("org_id", "state");

CREATE TABLE "cache_binding" (
    "cache_key" TEXT NOT NULL,
    "org_id" UUID NOT NULL,
    "repo_id" UUID NOT NULL,
    "namespace" TEXT NOT NULL,
    "prefix_key" TEXT NOT NULL,
    "entry_id" UUID NOT NULL REFERENCES "cache_entry"("id"),
    "bound_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cache_binding_pkey" PRIMARY KEY ("cache_key")
);
CREATE UNIQUE INDEX "cache_binding_entry_id_key" ON "cache_binding"("entry_id");
CREATE INDEX "cache_binding_prefix_idx" ON "cache_binding"("org_id", "repo_id", "namespace", "prefix_key", "bound_at" DESC);

-- Second line of defence: a binding only ever points at a live entry of the same scope and key
-- (the finaliser inserts the binding, then marks its entry bound, in one transaction).
CREATE FUNCTION cache_binding_check() RETURNS trigger AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM "cache_entry" e
    WHERE e."id" = NEW."entry_id" AND e."state" IN ('uploading','bound') AND e."cache_key" = NEW."cache_key"
      AND e."org_id" = NEW."org_id" AND e."repo_id" = NEW."repo_id" AND e."namespace" = NEW."namespace"
  ) THEN
    RAISE EXCEPTION 'cache_binding must reference a live entry with the same key and scope';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER "cache_binding_check" BEFORE INSERT OR UPDATE ON "cache_binding"
  FOR EACH ROW EXECUTE FUNCTION cache_binding_check();

CREATE TABLE "cache_conflict" (
    "id" BIGSERIAL NOT NULL,
    "org_id" UUID NOT NULL,
    "repo_id" UUID NOT NULL,
    "cache_key" TEXT NOT NULL,
    "bound_entry_id" UUID NOT NULL,
    "bound_sha256" TEXT NOT NULL,
    "rejected_entry_id" UUID NOT NULL,
    "rejected_sha256" TEXT NOT NULL,
    "attempt_id" UUID NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cache_conflict_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "cache_conflict_rejected_entry_id_key" ON "cache_conflict"("rejected_entry_id");
CREATE INDEX "cache_conflict_org_id_at_idx" ON "cache_conflict"("org_id", "at");

-- Per attempt figures reported by the agent (hit/miss, tier, bytes, times); the run page and the
-- per-org hit rate read them.
CREATE TABLE "cache_job_stat" (
    "attempt_id" UUID NOT NULL REFERENCES "attempt"("id"),
    "org_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "trust_class" TEXT NOT NULL CHECK ("trust_class" IN ('trusted','untrusted')),
    "restore_result" TEXT CHECK ("restore_result" IN ('hit','miss')),
    "restore_tier" TEXT CHECK ("restore_tier" IN ('local','remote')),
    "restore_exact" BOOLEAN,
    "restore_reason" TEXT,
    "bytes_restored" BIGINT CHECK ("bytes_restored" >= 0),
    "restore_ms" INTEGER CHECK ("restore_ms" >= 0),
    "save_result" TEXT CHECK ("save_result" IN ('saved','already_bound','conflict','refused','skipped','failed')),
    "save_reason" TEXT,
    "bytes_saved" BIGINT CHECK ("bytes_saved" >= 0),
    "save_ms" INTEGER CHECK ("save_ms" >= 0),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cache_job_stat_pkey" PRIMARY KEY ("attempt_id")
);
CREATE INDEX "cache_job_stat_org_id_trust_class_idx" ON "cache_job_stat"("org_id", "trust_class", "updated_at");
CREATE INDEX "cache_job_stat_run_id_idx" ON "cache_job_stat"("run_id");
