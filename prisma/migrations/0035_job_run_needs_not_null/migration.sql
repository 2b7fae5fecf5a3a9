-- job_run.needs was created nullable by 0001_init, while schema.prisma says NOT NULL (Prisma has no
-- nullable list) and every writer (freeze-run) gives an array: make the database say what the schema
-- says, so packages/db/test/migrations.test.ts checks it with no known drift left (docs/adr/0039).
UPDATE job_run SET needs = '{}' WHERE needs IS NULL;
ALTER TABLE job_run ALTER COLUMN needs SET NOT NULL;
