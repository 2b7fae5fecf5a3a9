-- Runners an org owns (issue 22, docs/adr/0034-runner-registration-and-host-health.md).

-- Org pools: a pool an org admin created for the org's own hosts is named `<org>/<name>`; platform
-- pools keep their bare names and stay operator-only (an operator may still dedicate one to an org
-- with owner_org_id, which does not make it the org's to manage).
ALTER TABLE "pool" DROP CONSTRAINT "pool_name_check";
ALTER TABLE "pool"
    ADD CONSTRAINT "pool_name_check" CHECK ("name" ~ '^([a-z0-9][a-z0-9_.-]{0,38}/)?[a-z0-9][a-z0-9_.-]{0,62}$'),
    ADD COLUMN "scope" TEXT NOT NULL DEFAULT 'platform' CHECK ("scope" IN ('platform', 'org')),
    ADD COLUMN "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- An org pool is owned by its org and carries the org prefix; a platform pool never has one.
    ADD CONSTRAINT "pool_scope_owner" CHECK ("scope" = 'platform' OR "owner_org_id" IS NOT NULL),
    ADD CONSTRAINT "pool_scope_name" CHECK (("scope" = 'org') = ("name" LIKE '%/%'));

-- A registration token: an org admin's short-lived secret that a host exchanges for its own host
-- credential (agent_token) bound to the token's org and pool. Only the SHA-256 is stored. Spending
-- is one guarded UPDATE (single_use AND spent_at IS NULL, not expired, not revoked): of two
-- concurrent exchanges exactly one gets the row back.
CREATE TABLE "runner_registration_token" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id") ON DELETE CASCADE,
    "pool" TEXT NOT NULL REFERENCES "pool"("name"),
    "token_hash" TEXT NOT NULL,
    "single_use" BOOLEAN NOT NULL DEFAULT true,
    "uses" INTEGER NOT NULL DEFAULT 0 CHECK ("uses" >= 0),
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    -- Set by the (only) exchange of a single-use token.
    "spent_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "runner_registration_token_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "runner_registration_token_hash_key" UNIQUE ("token_hash"),
    CONSTRAINT "runner_registration_token_expiry" CHECK ("expires_at" > "created_at"),
    CONSTRAINT "runner_registration_token_single_use"
      CHECK (NOT "single_use" OR ("uses" <= 1 AND ("spent_at" IS NULL) = ("uses" = 0)))
);
CREATE INDEX "runner_registration_token_org_idx" ON "runner_registration_token"("org_id", "created_at");

-- One row per host: what the fleet view lists and what drain, quarantine and revoke act on. Every
-- host credential has one (registered hosts at the exchange; operator-made credentials at their
-- first session), org_id NULL for a platform pool's host. `state` is the host's standing as set by
-- admins and by automatic quarantine; `offline` is written when its heartbeats stop (a listing
-- also reads an online host whose last heartbeat is older than a lease as offline).
CREATE TABLE "runner" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID REFERENCES "org"("id") ON DELETE CASCADE,
    "pool" TEXT NOT NULL,
    "name" TEXT NOT NULL CHECK (length("name") BETWEEN 1 AND 100),
    "labels" TEXT[] NOT NULL DEFAULT '{}',
    "isolation" TEXT CHECK ("isolation" IS NULL OR "isolation" IN ('process', 'microvm')),
    "state" TEXT NOT NULL DEFAULT 'online'
      CHECK ("state" IN ('online', 'draining', 'quarantined', 'offline', 'revoked')),
    "state_changed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "quarantine_kind" TEXT
      CHECK ("quarantine_kind" IS NULL OR "quarantine_kind" IN ('manual', 'platform_failures', 'lease_expiries')),
    "quarantine_reason" TEXT,
    "quarantined_at" TIMESTAMPTZ(3),
    "quarantined_by" TEXT,
    "protocol_version" INTEGER,
    "agent_version" TEXT,
    "last_heartbeat_at" TIMESTAMPTZ(3),
    "agent_token_id" UUID NOT NULL REFERENCES "agent_token"("id") ON DELETE CASCADE,
    "registration_token_id" UUID REFERENCES "runner_registration_token"("id") ON DELETE SET NULL,
    "revoked_at" TIMESTAMPTZ(3),
    "revoked_by" TEXT,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "runner_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "runner_agent_token_key" UNIQUE ("agent_token_id"),
    -- A quarantined host always says why, since when and by whom (an admin or the automatic rule).
    CONSTRAINT "runner_quarantine_said" CHECK ("state" <> 'quarantined'
      OR ("quarantine_kind" IS NOT NULL AND "quarantine_reason" IS NOT NULL AND "quarantined_at" IS NOT NULL AND "quarantined_by" IS NOT NULL)),
    -- Revocation is final: the state and the time go together.
    CONSTRAINT "runner_revoked_said" CHECK (("state" = 'revoked') = ("revoked_at" IS NOT NULL))
);
CREATE INDEX "runner_org_idx" ON "runner"("org_id", "created_at");
CREATE INDEX "runner_pool_idx" ON "runner"("pool");

-- Sessions name their host and say which agent started them; ended_at is set when the control plane
-- ends a session (revocation) or the agent says goodbye.
ALTER TABLE "agent_session"
    ADD COLUMN "runner_id" UUID REFERENCES "runner"("id") ON DELETE CASCADE,
    ADD COLUMN "protocol_version" INTEGER,
    ADD COLUMN "agent_version" TEXT,
    ADD COLUMN "ended_at" TIMESTAMPTZ(3);
CREATE INDEX "agent_session_runner_idx" ON "agent_session"("runner_id");

-- Automatic quarantine counts a host's recent platform failures and lease expiries through its
-- sessions' attempts.
CREATE INDEX "attempt_session_finished_idx" ON "attempt"("session_id", "finished_at") WHERE "outcome" = 'platform_failure';
