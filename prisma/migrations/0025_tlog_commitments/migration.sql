-- Issue 28 (docs/adr/0026 "Amended (issue 28)"): the public transparency log proves without telling.
-- A new attestation's leaf is a commitment, SHA-256(tag || salt || envelope), not the envelope; the
-- per-entry random salt stays here, private, and travels only in the bundle handed to the org's
-- members and auditors, so that they can recompute the leaf. NULL = an entry written before this
-- migration, whose leaf is the envelope itself (kind 'dsse'): the log is append-only, it stays.
ALTER TABLE "attestation"
    ADD COLUMN "tlog_salt" BYTEA,
    ADD CONSTRAINT "attestation_tlog_salt_check" CHECK ("tlog_salt" IS NULL OR length("tlog_salt") = 32);

-- The salt is part of what was logged: as immutable as the envelope.
CREATE OR REPLACE FUNCTION "attestation_immutable"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'attestation % is append-only', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  IF NEW."envelope" IS DISTINCT FROM OLD."envelope"
     OR NEW."tlog_salt" IS DISTINCT FROM OLD."tlog_salt"
     OR (OLD."tlog_index" IS NOT NULL AND NEW."tlog_index" IS DISTINCT FROM OLD."tlog_index")
     OR NEW."job_id" IS DISTINCT FROM OLD."job_id" OR NEW."key_id" IS DISTINCT FROM OLD."key_id"
     OR (OLD."state" <> 'logged' AND NEW."state" IS DISTINCT FROM OLD."state") THEN
    RAISE EXCEPTION 'attestation % is immutable once signed and verified', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- A repo its admins mark public: its attestations' envelopes are served to anyone (by log index);
-- every other repo's only to its org's members and auditors.
ALTER TABLE "repo" ADD COLUMN "provenance_public" BOOLEAN NOT NULL DEFAULT false;
