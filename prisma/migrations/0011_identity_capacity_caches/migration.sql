-- Identity, shared capacity and caches by ref (issue 15).

-- Members and webhook senders are matched by the forge's numeric user id (GitHub's user.id /
-- sender.id), never by login: GitHub lets a login be renamed and then registered by someone else.
-- Nullable: users added before this migration have no known id and are not matched for trust
-- until an admin records it (`kiln member add <org> <login> --forge-id <n>`).
ALTER TABLE "app_user" ADD COLUMN "forge_id" BIGINT CHECK ("forge_id" IS NULL OR "forge_id" > 0);
CREATE UNIQUE INDEX "app_user_forge_id_key" ON "app_user"("forge_id");

-- Platform operators: the only ones who set entitlements in shared pools (org admins may only
-- lower their own hard cap). Granted on the server with `kiln platform-admin add <login>`.
ALTER TABLE "app_user" ADD COLUMN "platform_admin" BOOLEAN NOT NULL DEFAULT false;

-- The repository's default branch: a manual trigger's ref when none is named, and the second
-- namespace every run reads its trusted caches from.
ALTER TABLE "repo" ADD COLUMN "default_branch" TEXT NOT NULL DEFAULT 'main'
  CHECK ("default_branch" ~ '^[A-Za-z0-9._/-]{1,200}$' AND "default_branch" NOT LIKE 'refs/%');

-- Trusted cache entries are namespaced by the writing run's ref (refs/heads/<branch>) as well as
-- repo and trust class: a run reads its own ref's entries, then the default branch's.
ALTER TABLE "cache_entry" ADD COLUMN "ref" TEXT CHECK ("ref" IS NULL OR "ref" ~ '^refs/');
ALTER TABLE "cache_binding" ADD COLUMN "ref" TEXT;

-- Entries written before refs existed cannot be attributed to one (a member's manual trigger at a
-- fork's commit wrote into the repo-wide namespace), so none of them may keep answering restores:
-- their bindings go, the entries are evicted in the ordered log, and the evict-caches worker
-- deletes their objects. Their keys would not match any more anyway (the ref is key material).
DELETE FROM "cache_binding";
INSERT INTO "transition_event" ("org_id", "run_id", "job_id", "attempt_id", "entity", "from_state", "to_state", "reason", "data")
SELECT e."org_id", e."run_id", e."job_id", e."attempt_id", 'cache', e."state", 'evicted', 'ref_namespace',
       jsonb_build_object('entry_id', e."id", 'cache_key', e."cache_key")
FROM "cache_entry" e WHERE e."state" IN ('bound', 'uploading');
UPDATE "cache_entry" SET "state" = 'evicted', "evicted_at" = now() WHERE "state" IN ('bound', 'uploading');
ALTER TABLE "cache_binding" ALTER COLUMN "ref" SET NOT NULL;
ALTER TABLE "cache_binding" ADD CONSTRAINT "cache_binding_ref_check" CHECK ("ref" ~ '^refs/');
DROP INDEX "cache_binding_prefix_idx";
CREATE INDEX "cache_binding_prefix_idx" ON "cache_binding"("org_id", "repo_id", "namespace", "ref", "prefix_key", "bound_at" DESC);

-- The binding's second line of defence now also checks the ref.
CREATE OR REPLACE FUNCTION cache_binding_check() RETURNS trigger AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM "cache_entry" e
    WHERE e."id" = NEW."entry_id" AND e."state" IN ('uploading','bound') AND e."cache_key" = NEW."cache_key"
      AND e."org_id" = NEW."org_id" AND e."repo_id" = NEW."repo_id" AND e."namespace" = NEW."namespace"
      AND e."ref" IS NOT DISTINCT FROM NEW."ref"
  ) THEN
    RAISE EXCEPTION 'cache_binding must reference a live entry with the same key and scope';
  END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
