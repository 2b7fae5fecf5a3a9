-- Control-plane attestations (issue 17, docs/adr/0027-control-plane-attestor.md): the attestor's
-- public keys, one signed SLSA statement per successful job that bound artifacts, its subjects (for
-- search by digest), the verifier's quarantine of artifacts whose bytes no longer match, and the
-- cache entries each attempt was granted (a resolved dependency of its provenance).

-- Public halves only: the private key lives in the workers' key file (KILN_ATTESTATION_KEY_FILE).
CREATE TABLE "attestation_key" (
    "key_id" TEXT NOT NULL CHECK ("key_id" ~ '^[0-9a-f]{64}$'),
    "algorithm" TEXT NOT NULL CHECK ("algorithm" IN ('ecdsa-p256-sha256')),
    "spki_pem" TEXT NOT NULL,
    "valid_from" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "valid_until" TIMESTAMPTZ(3),
    CONSTRAINT "attestation_key_pkey" PRIMARY KEY ("key_id")
);

CREATE TABLE "attestation" (
    "id" UUID NOT NULL,
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "run_id" UUID NOT NULL REFERENCES "workflow_run"("id"),
    -- One statement per job: the winning attempt's (a job completes once).
    "job_id" UUID NOT NULL REFERENCES "job_run"("id"),
    "attempt_id" UUID NOT NULL REFERENCES "attempt"("id"),
    "epoch" INTEGER NOT NULL,
    "commit_sha" TEXT NOT NULL,
    "key_id" TEXT NOT NULL REFERENCES "attestation_key"("key_id"),
    -- The canonical JSON of the DSSE envelope: exactly the transparency log's leaf bytes.
    "envelope" TEXT NOT NULL,
    -- Set by the same transaction, as its last write: the log's sequencer lock is held from the
    -- append to the commit, so the append comes after every other write (docs/adr/0026). A
    -- deferred check below refuses a commit without it.
    "tlog_index" BIGINT,
    -- logged -> verified | mismatch (the verifier job); a mismatch quarantines the artifacts.
    "state" TEXT NOT NULL DEFAULT 'logged' CHECK ("state" IN ('logged','verified','mismatch')),
    "verified_at" TIMESTAMPTZ(3),
    "verify_detail" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "attestation_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "attestation_job_id_key" UNIQUE ("job_id"),
    CONSTRAINT "attestation_tlog_index_key" UNIQUE ("tlog_index")
);
CREATE INDEX "attestation_run_id_idx" ON "attestation" ("run_id");
CREATE INDEX "attestation_org_commit_idx" ON "attestation" ("org_id", "commit_sha");

-- What was signed never changes: only the verifier's verdict moves, once, forward.
CREATE FUNCTION "attestation_immutable"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'attestation % is append-only', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  IF NEW."envelope" IS DISTINCT FROM OLD."envelope"
     OR (OLD."tlog_index" IS NOT NULL AND NEW."tlog_index" IS DISTINCT FROM OLD."tlog_index")
     OR NEW."job_id" IS DISTINCT FROM OLD."job_id" OR NEW."key_id" IS DISTINCT FROM OLD."key_id"
     OR (OLD."state" <> 'logged' AND NEW."state" IS DISTINCT FROM OLD."state") THEN
    RAISE EXCEPTION 'attestation % is immutable once signed and verified', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "attestation_immutable" BEFORE UPDATE OR DELETE ON "attestation"
    FOR EACH ROW EXECUTE FUNCTION "attestation_immutable"();
-- No attestation commits without its log entry.
CREATE FUNCTION "attestation_logged_at_commit"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM "attestation" WHERE "id" = NEW."id" AND "tlog_index" IS NULL) THEN
    RAISE EXCEPTION 'attestation % committed without a transparency-log index', NEW."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER "attestation_logged_at_commit" AFTER INSERT ON "attestation"
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "attestation_logged_at_commit"();

CREATE TABLE "attestation_subject" (
    "attestation_id" UUID NOT NULL REFERENCES "attestation"("id"),
    "generation_id" UUID NOT NULL REFERENCES "artifact_generation"("id"),
    "name" TEXT NOT NULL,
    "sha256" TEXT NOT NULL CHECK ("sha256" ~ '^[0-9a-f]{64}$'),
    CONSTRAINT "attestation_subject_pkey" PRIMARY KEY ("attestation_id", "generation_id"),
    CONSTRAINT "attestation_subject_generation_id_key" UNIQUE ("generation_id")
);
CREATE INDEX "attestation_subject_sha256_idx" ON "attestation_subject" ("sha256");

-- Quarantine, never delete: the row and the object both stay for the audit.
CREATE TABLE "artifact_quarantine" (
    "generation_id" UUID NOT NULL REFERENCES "artifact_generation"("id"),
    "org_id" UUID NOT NULL REFERENCES "org"("id"),
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "attestation_id" UUID NOT NULL REFERENCES "attestation"("id"),
    "reason" TEXT NOT NULL,
    "expected_sha256" TEXT NOT NULL,
    "observed_sha256" TEXT,
    "detected_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "artifact_quarantine_pkey" PRIMARY KEY ("generation_id")
);
CREATE INDEX "artifact_quarantine_org_idx" ON "artifact_quarantine" ("org_id", "detected_at");
CREATE FUNCTION "artifact_quarantine_permanent"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'artifact_quarantine rows are permanent' USING ERRCODE = 'check_violation';
END $$;
CREATE TRIGGER "artifact_quarantine_permanent" BEFORE UPDATE OR DELETE ON "artifact_quarantine"
    FOR EACH ROW EXECUTE FUNCTION "artifact_quarantine_permanent"();

-- The bound cache entry an attempt was handed (grantCacheRestore), recorded in that transaction.
CREATE TABLE "cache_restore_grant" (
    "attempt_id" UUID NOT NULL REFERENCES "attempt"("id"),
    "entry_id" UUID NOT NULL REFERENCES "cache_entry"("id"),
    "cache_key" TEXT NOT NULL,
    "sha256" TEXT NOT NULL,
    "granted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "cache_restore_grant_pkey" PRIMARY KEY ("attempt_id", "entry_id")
);
