-- Live logs (issue 4, docs/adr/0006-logs.md): journal payloads are stored out of line without
-- compression. A journal row lives only until the archiver has copied it to object storage, so
-- compressing it buys nothing lasting, and pglz (the only method the embedded PostgreSQL build
-- has; it lacks lz4) cost the server CPU on every ingested byte, on the same cores as ingest
-- itself (docs/benchmarks.md "Live logs"). Rows written before this keep their form; both read
-- back the same.
ALTER TABLE "log_chunk" ALTER COLUMN "data" SET STORAGE EXTERNAL;
