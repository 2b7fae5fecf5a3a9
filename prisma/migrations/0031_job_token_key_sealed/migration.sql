-- Job-token keys sealed at rest (issue 28, docs/adr/0018 "Amended (issue 28)"): the HMAC key is
-- stored AES-256-GCM-sealed under the identity KEK (a file the database never holds, ADR 0024),
-- naming the KEK it is sealed under. A row is either clear (made before this migration; the first
-- process holding the KEK seals it and nulls the clear column) or sealed, never both, never neither.
ALTER TABLE "job_token_key"
    ALTER COLUMN "secret" DROP NOT NULL,
    ADD COLUMN "secret_sealed" BYTEA,
    ADD COLUMN "kek_id" TEXT,
    ADD CONSTRAINT "job_token_key_sealed_check" CHECK (
        ("secret" IS NULL) <> ("secret_sealed" IS NULL)
        AND ("secret_sealed" IS NULL) = ("kek_id" IS NULL)
    );
