-- Forge identity pinned and pull-request identity (issue 28; docs/adr/0028 and 0024, "Amended (issue 28)").

-- 1. Repo names are unique case-insensitively: GitHub matches owner/name without regard to case, so
--    `Acme/App` and `acme/app` are one repository there and must be one here. Existing clashes are
--    not resolved silently: the migration stops and names them, for an operator to disconnect and
--    remove (or rename) one of each pair before migrating again.
DO $$
DECLARE
  clashes text;
BEGIN
  SELECT string_agg(names, '; ') INTO clashes FROM (
    SELECT string_agg(full_name || ' (repo ' || id::text || ')', ', ' ORDER BY full_name) AS names
    FROM repo GROUP BY lower(full_name) HAVING count(*) > 1) c;
  IF clashes IS NOT NULL THEN
    RAISE EXCEPTION 'repo names differing only by case (GitHub treats them as one repository): %', clashes
      USING HINT = 'keep one repo of each group: remove the others (or rename them), then migrate again';
  END IF;
END $$;
CREATE UNIQUE INDEX "repo_full_name_lower_key" ON "repo" (lower("full_name"));

-- 2. The forge's numeric repository id, pinned on the first verified sight (a forge token or the
--    App seeing the repo, or the first webhook) and compared on every event afterwards.
ALTER TABLE "repo" ADD COLUMN "forge_repository_id" BIGINT;

-- 3. Untrusted runs (fork pull requests, non-members) get no ID token unless the repo opts in.
ALTER TABLE "repo" ADD COLUMN "untrusted_id_tokens" BOOLEAN NOT NULL DEFAULT false;

-- 4. An App installation learned before this migration came from a webhook verified only with the
--    repo's own secret, which the repo's org chooses: it is not evidence. Dropped here; the next
--    delivery signed with the App's webhook secret binds it again after the App's API confirms it.
UPDATE "repo_forge" SET "installation_id" = NULL, "updated_at" = now() WHERE "installation_id" IS NOT NULL;
ALTER TABLE "repo_forge" ADD COLUMN "installation_confirmed_at" TIMESTAMPTZ(3);

-- 5. A pull request's run carries refs/pull/<n>/head as its ref; the head branch, as the forge named
--    it, is kept in its own column (never a ref anything is decided on). Existing PR runs and their
--    retries and re-runs move to the same shape.
ALTER TABLE "workflow_run" ADD COLUMN "head_ref" TEXT;
UPDATE "workflow_run" r SET "head_ref" = r."ref", "ref" = 'refs/pull/' || p."number" || '/head'
  FROM "run_pull_request" p WHERE p."run_id" = r."id" AND r."trigger" = 'pull_request';
WITH RECURSIVE pr_family AS (
  SELECT r."id", r."ref", r."head_ref" FROM "workflow_run" r WHERE r."trigger" = 'pull_request' AND r."ref" LIKE 'refs/pull/%'
  UNION ALL
  SELECT c."id", f."ref", f."head_ref" FROM "workflow_run" c JOIN pr_family f ON c."parent_run_id" = f."id"
  WHERE c."trigger" <> 'pull_request')
UPDATE "workflow_run" w SET "ref" = f."ref", "head_ref" = f."head_ref"
  FROM pr_family f WHERE w."id" = f."id" AND w."trigger" <> 'pull_request';
