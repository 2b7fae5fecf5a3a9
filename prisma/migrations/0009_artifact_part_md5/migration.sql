-- Artifacts (issue 5, docs/adr/0007-artifacts.md "Verification by the store's part digests"): the
-- MD5 of each part's bytes as the agent sent them, beside their SHA-256. With it the finaliser can
-- check the store's multipart ETag (MD5 of the parts' MD5s, "-N") instead of reading the whole
-- object back. NULL for parts reported without it (older agents): those uploads are read back.
ALTER TABLE "artifact_part" ADD COLUMN "md5" TEXT CHECK ("md5" IS NULL OR "md5" ~ '^[0-9a-f]{32}$');
