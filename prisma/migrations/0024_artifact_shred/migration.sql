-- Artifacts under crypto-shredding (issue 21, docs/adr/0037 "Artifacts"). The host agent seals each
-- part as it uploads it, in the chunked AES-256-GCM framing, under the org's artifact data key of
-- the upload session's day and the run's class. The control plane makes the key and the object's
-- salt when the session opens and hands them to the agent only (never to the sandbox).
-- size_bytes and sha256 stay the plaintext's (what provenance names); stored_size_bytes is what the
-- store holds, and the part rows (sizes, MD5s, ETags) are the sealed parts'.
ALTER TABLE "artifact_generation"
    ADD COLUMN "shred_key_id" UUID,
    ADD COLUMN "shred_salt" BYTEA,
    ADD COLUMN "shred_chunk_size" INTEGER,
    ADD COLUMN "stored_size_bytes" BIGINT,
    -- The instant the data key is destroyed: the bytes are unreadable from then on, whatever holds them.
    ADD COLUMN "shred_due_at" TIMESTAMPTZ(3),
    -- How many times the retention worker re-sealed the object under a later key (a hold or a pointer
    -- kept it past its key's due); each re-seal writes a new object key.
    ADD COLUMN "reseal_count" INTEGER NOT NULL DEFAULT 0,
    ADD CONSTRAINT "artifact_generation_shred_check" CHECK (
      ("shred_key_id" IS NULL) = ("shred_salt" IS NULL)
      AND ("shred_key_id" IS NULL) = ("shred_chunk_size" IS NULL)
      AND ("shred_key_id" IS NULL) = ("stored_size_bytes" IS NULL)
      AND ("shred_key_id" IS NULL) = ("shred_due_at" IS NULL)),
    ADD CONSTRAINT "artifact_generation_shred_salt_check" CHECK ("shred_salt" IS NULL OR length("shred_salt") = 8),
    ADD CONSTRAINT "artifact_generation_shred_chunk_check" CHECK ("shred_chunk_size" IS NULL OR "shred_chunk_size" BETWEEN 1 AND 16777216);

-- The re-sealer's scan: sealed, encrypted, live generations by their key's due instant.
CREATE INDEX "artifact_generation_shred_due_idx" ON "artifact_generation" ("shred_due_at")
    WHERE "shred_key_id" IS NOT NULL AND "expired_at" IS NULL AND "state" = 'sealed';
