-- Artifacts (issue 5, docs/adr/0007-artifacts.md): upload sessions on artifact_generation and one
-- row per uploaded multipart part. Hand-written to match prisma/schema.prisma (docs/adr/0002).

-- Upload session columns. A generation is one S3 multipart upload under a fresh object key; it is
-- never handed to another attempt.
ALTER TABLE "artifact_generation"
    ADD COLUMN "org_id" UUID,
    ADD COLUMN "format" TEXT NOT NULL DEFAULT 'file',
    ADD COLUMN "upload_id" TEXT,
    ADD COLUMN "part_size" BIGINT,
    ADD COLUMN "part_count" INTEGER,
    ADD COLUMN "store_completed_at" TIMESTAMPTZ(3),
    ADD COLUMN "abandoned_at" TIMESTAMPTZ(3),
    ADD COLUMN "abandon_reason" TEXT,
    ADD COLUMN "object_deleted_at" TIMESTAMPTZ(3);

-- CreateTable
CREATE TABLE "artifact_part" (
    "generation_id" UUID NOT NULL,
    "part_number" INTEGER NOT NULL,
    "size_bytes" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "etag" TEXT NOT NULL,
    "tries" INTEGER NOT NULL DEFAULT 1,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "artifact_part_pkey" PRIMARY KEY ("generation_id","part_number")
);

-- CreateIndex
CREATE INDEX "artifact_generation_state_created_at_idx" ON "artifact_generation"("state", "created_at");

-- CreateIndex
CREATE INDEX "artifact_generation_job_id_idx" ON "artifact_generation"("job_id");

-- CreateIndex
CREATE INDEX "artifact_binding_run_id_idx" ON "artifact_binding"("run_id");

-- AddForeignKey
ALTER TABLE "artifact_part" ADD CONSTRAINT "artifact_part_generation_id_fkey" FOREIGN KEY ("generation_id") REFERENCES "artifact_generation"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ---- hand-written: checks and partial indexes ----
-- Formats and sizes are owned by @kiln/domain (artifacts/artifact-rules.ts, part-plan.ts).
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_format_check" CHECK ("format" IN ('file','tar'));
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_size_check" CHECK ("size_bytes" IS NULL OR "size_bytes" BETWEEN 0 AND 21474836480);
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_sha256_check" CHECK ("sha256" IS NULL OR "sha256" ~ '^[0-9a-f]{64}$');
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_parts_check" CHECK ("part_count" IS NULL OR "part_count" BETWEEN 1 AND 10000);
-- A sealed generation has verified bytes; an abandoned one says when and why.
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_sealed_check" CHECK ("state" <> 'sealed' OR ("sealed_at" IS NOT NULL AND "size_bytes" IS NOT NULL AND "sha256" IS NOT NULL));
ALTER TABLE "artifact_generation" ADD CONSTRAINT "artifact_generation_abandoned_check" CHECK ("state" <> 'abandoned' OR "abandoned_at" IS NOT NULL);
ALTER TABLE "artifact_part" ADD CONSTRAINT "artifact_part_number_check" CHECK ("part_number" BETWEEN 1 AND 10000);
ALTER TABLE "artifact_part" ADD CONSTRAINT "artifact_part_size_check" CHECK ("size_bytes" >= 0);
ALTER TABLE "artifact_part" ADD CONSTRAINT "artifact_part_sha256_check" CHECK ("sha256" ~ '^[0-9a-f]{64}$');
-- A binding may only point at a sealed generation of the job it names (second line of defence
-- behind the completion transaction).
CREATE FUNCTION "artifact_binding_requires_sealed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM "artifact_generation" g
                 WHERE g."id" = NEW."generation_id" AND g."state" = 'sealed'
                   AND g."job_id" = NEW."job_id" AND g."run_id" = NEW."run_id" AND g."name" = NEW."name") THEN
    RAISE EXCEPTION 'artifact_binding % must reference a sealed generation of the same job and name', NEW."id"
      USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "artifact_binding_requires_sealed" BEFORE INSERT OR UPDATE ON "artifact_binding"
    FOR EACH ROW EXECUTE FUNCTION "artifact_binding_requires_sealed"();
-- A bound generation never leaves 'sealed' (garbage collection and retention must not unseal it).
CREATE FUNCTION "artifact_generation_bound_stays_sealed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD."state" = 'sealed' AND NEW."state" <> 'sealed'
     AND EXISTS (SELECT 1 FROM "artifact_binding" b WHERE b."generation_id" = OLD."id") THEN
    RAISE EXCEPTION 'artifact_generation % is bound and must stay sealed', OLD."id" USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "artifact_generation_bound_stays_sealed" BEFORE UPDATE ON "artifact_generation"
    FOR EACH ROW EXECUTE FUNCTION "artifact_generation_bound_stays_sealed"();
-- The collector's scan: generations not yet abandoned, oldest first.
CREATE INDEX "artifact_generation_live_idx" ON "artifact_generation" ("created_at") WHERE "state" IN ('uploading','sealed');
