-- Credentials (issue 15, docs/adr/0018-credentials-and-key-rotation.md): API tokens expire (90 days
-- unless created otherwise) and record when they were last used (throttled to once a minute);
-- host credentials may be bound to an org as well as a pool, and record who revoked them.
ALTER TABLE "api_token" ADD COLUMN "expires_at" TIMESTAMPTZ(3);
-- Tokens issued before expiry existed get the default lifetime from now, not from their creation:
-- an upgrade must not lock out every existing integration at once.
UPDATE "api_token" SET "expires_at" = now() + interval '90 days';
ALTER TABLE "api_token" ALTER COLUMN "expires_at" SET NOT NULL;
ALTER TABLE "api_token" ALTER COLUMN "expires_at" SET DEFAULT now() + interval '90 days';
ALTER TABLE "api_token" ADD COLUMN "last_used_at" TIMESTAMPTZ(3);
CREATE INDEX "api_token_org_id_created_at_idx" ON "api_token"("org_id", "created_at" DESC);

ALTER TABLE "agent_token" ADD COLUMN "org_id" UUID REFERENCES "org"("id") ON DELETE RESTRICT ON UPDATE CASCADE;
ALTER TABLE "agent_token" ADD COLUMN "name" TEXT NOT NULL DEFAULT 'host';
CREATE INDEX "agent_session_agent_token_id_idx" ON "agent_session"("agent_token_id");

-- Job-token signing keys, by key id. The newest unretired key signs; a retired key still verifies
-- until verify_until, which is its retirement plus the longest a job token lives, so no token it
-- signed is refused early. The key that existed before rotation carries on as "k0".
CREATE TABLE "job_token_key" (
    "kid" TEXT NOT NULL CHECK ("kid" ~ '^[A-Za-z0-9]{1,16}$'),
    "secret" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "retired_at" TIMESTAMPTZ(3),
    "verify_until" TIMESTAMPTZ(3),
    CONSTRAINT "job_token_key_pkey" PRIMARY KEY ("kid"),
    CONSTRAINT "job_token_key_retired_check" CHECK (("retired_at" IS NULL) = ("verify_until" IS NULL))
);
-- At most one signing key at a time: a rotation that races another fails instead of forking.
CREATE UNIQUE INDEX "job_token_key_one_active" ON "job_token_key" ((true)) WHERE "retired_at" IS NULL;
INSERT INTO "job_token_key" ("kid", "secret")
  SELECT 'k0', "value" FROM "platform_secret" WHERE "name" = 'job_token_hmac';
DELETE FROM "platform_secret" WHERE "name" = 'job_token_hmac';
