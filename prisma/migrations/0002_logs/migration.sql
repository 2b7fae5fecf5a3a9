-- Logs (issue 4, docs/adr/0006-logs.md): the durable journal (log_chunk), per-attempt log state
-- (log_attempt) and the index of archived segments (log_segment). Hand-written to match
-- prisma/schema.prisma (docs/adr/0002).

-- CreateTable
CREATE TABLE "log_attempt" (
    "attempt_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "run_id" UUID NOT NULL,
    "org_id" UUID NOT NULL,
    "epoch" INTEGER NOT NULL,
    "state" TEXT NOT NULL DEFAULT 'open',
    "next_seq" INTEGER NOT NULL DEFAULT 0,
    "stdout_bytes" BIGINT NOT NULL DEFAULT 0,
    "stderr_bytes" BIGINT NOT NULL DEFAULT 0,
    "stdout_dropped" BIGINT NOT NULL DEFAULT 0,
    "stderr_dropped" BIGINT NOT NULL DEFAULT 0,
    "journal_bytes" BIGINT NOT NULL DEFAULT 0,
    "archived_seq" INTEGER NOT NULL DEFAULT 0,
    "archive_lease_until" TIMESTAMPTZ(3),
    "index_key" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "ended_at" TIMESTAMPTZ(3),

    CONSTRAINT "log_attempt_pkey" PRIMARY KEY ("attempt_id")
);

-- CreateTable
CREATE TABLE "log_chunk" (
    "attempt_id" UUID NOT NULL,
    "seq" INTEGER NOT NULL,
    "stream" TEXT NOT NULL,
    "byte_offset" BIGINT NOT NULL,
    "length" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "data" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "log_chunk_pkey" PRIMARY KEY ("attempt_id","seq")
);

-- CreateTable
CREATE TABLE "log_segment" (
    "attempt_id" UUID NOT NULL,
    "from_seq" INTEGER NOT NULL,
    "to_seq" INTEGER NOT NULL,
    "object_key" TEXT NOT NULL,
    "raw_bytes" BIGINT NOT NULL,
    "stored_bytes" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "chunks" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "log_segment_pkey" PRIMARY KEY ("attempt_id","from_seq")
);

-- CreateIndex
CREATE INDEX "log_attempt_job_id_epoch_idx" ON "log_attempt"("job_id", "epoch");

-- CreateIndex
CREATE UNIQUE INDEX "log_segment_object_key_key" ON "log_segment"("object_key");

-- AddForeignKey
ALTER TABLE "log_chunk" ADD CONSTRAINT "log_chunk_attempt_id_fkey" FOREIGN KEY ("attempt_id") REFERENCES "log_attempt"("attempt_id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "log_segment" ADD CONSTRAINT "log_segment_attempt_id_fkey" FOREIGN KEY ("attempt_id") REFERENCES "log_attempt"("attempt_id") ON DELETE RESTRICT ON UPDATE CASCADE;


-- ---- hand-written: references, checks, storage and partial indexes ----
-- Every log belongs to a real attempt (no Prisma back-relation, so the Attempt model stays untouched).
ALTER TABLE "log_attempt" ADD CONSTRAINT "log_attempt_attempt_id_fkey" FOREIGN KEY ("attempt_id") REFERENCES "attempt"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
-- LogState and LogStream are owned by @kiln/domain (checked at compile time in packages/engine/src/logs/log-store.ts).
ALTER TABLE "log_attempt" ADD CONSTRAINT "log_attempt_state_check" CHECK ("state" IN ('open','sealed','truncated','gapped'));
ALTER TABLE "log_attempt" ADD CONSTRAINT "log_attempt_ended_check" CHECK (("state" = 'open') = ("ended_at" IS NULL));
ALTER TABLE "log_attempt" ADD CONSTRAINT "log_attempt_counts_check" CHECK ("next_seq" >= 0 AND "archived_seq" >= 0 AND "archived_seq" <= "next_seq" AND "journal_bytes" >= 0 AND "stdout_bytes" >= 0 AND "stderr_bytes" >= 0 AND "stdout_dropped" >= 0 AND "stderr_dropped" >= 0);
ALTER TABLE "log_chunk" ADD CONSTRAINT "log_chunk_stream_check" CHECK ("stream" IN ('stdout','stderr'));
ALTER TABLE "log_chunk" ADD CONSTRAINT "log_chunk_length_check" CHECK ("length" > 0 AND "length" = octet_length("data") AND "byte_offset" >= 0);
ALTER TABLE "log_segment" ADD CONSTRAINT "log_segment_range_check" CHECK ("from_seq" >= 0 AND "to_seq" >= "from_seq");
-- Chunk payloads are stored out of line without compression: ingest is the hot path and pglz would
-- cost CPU on every chunk; segments are compressed once, by the archiver.
ALTER TABLE "log_chunk" ALTER COLUMN "data" SET STORAGE EXTERNAL;
-- One (stream, offset) holds one chunk: a second writer of the same position can never slip in.
CREATE UNIQUE INDEX "log_chunk_stream_offset_key" ON "log_chunk" ("attempt_id", "stream", "byte_offset");
-- The journal budget sums these rows; the archiver scans them for work.
CREATE INDEX "log_attempt_journal_idx" ON "log_attempt" ("journal_bytes") WHERE "journal_bytes" > 0;
CREATE INDEX "log_attempt_unindexed_idx" ON "log_attempt" ("ended_at") WHERE "state" <> 'open' AND "index_key" IS NULL;
