-- Secrets (issue 16, docs/adr/0025-secrets-envelope-and-broker.md): envelope-encrypted values,
-- a data key (DEK) per org wrapped under the key-encryption key (KEK). No key material in clear.

-- The KEKs this database has known, by id only (the key itself lives in KILN_SECRETS_KEK_FILE).
-- Exactly one is active: data keys are wrapped under it; a disabled one opens nothing any more.
CREATE TABLE "secret_kek" (
    "id" TEXT NOT NULL CHECK ("id" ~ '^[A-Za-z0-9._-]{1,64}$'),
    "state" TEXT NOT NULL CHECK ("state" IN ('active','disabled')),
    "activated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "disabled_at" TIMESTAMPTZ(3),
    CONSTRAINT "secret_kek_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "secret_kek_disabled_at" CHECK (("state" = 'disabled') = ("disabled_at" IS NOT NULL))
);
CREATE UNIQUE INDEX "secret_kek_one_active" ON "secret_kek" ("state") WHERE "state" = 'active';

-- One data key per org: nonce || AES-256-GCM(KEK, dek, AAD "kiln-dek:v1:<org_id>:<kek_id>") || tag.
CREATE TABLE "org_secret_key" (
    "org_id" UUID NOT NULL REFERENCES "org"("id") ON DELETE CASCADE,
    "kek_id" TEXT NOT NULL REFERENCES "secret_kek"("id"),
    "wrapped_dek" BYTEA NOT NULL CHECK (octet_length("wrapped_dek") = 12 + 32 + 16),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "rewrapped_at" TIMESTAMPTZ(3),
    CONSTRAINT "org_secret_key_pkey" PRIMARY KEY ("org_id")
);

-- The current version of each secret. A delete clears the ciphertext and keeps the row, so a later
-- set continues the version sequence and an audit record's (name, version) names one value only.
-- ciphertext: nonce || AES-256-GCM(DEK, value, AAD "kiln-secret:v1:<org_id>:<scope>:<name>:<version>") || tag.
CREATE TABLE "secret" (
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    "org_id" UUID NOT NULL REFERENCES "org"("id") ON DELETE CASCADE,
    "repo_id" UUID REFERENCES "repo"("id") ON DELETE CASCADE,
    "scope" TEXT NOT NULL,
    "name" TEXT NOT NULL CHECK ("name" ~ '^[A-Za-z_][A-Za-z0-9_]{0,99}$' AND "name" !~* '^KILN_'),
    "version" INTEGER NOT NULL CHECK ("version" >= 1),
    "ciphertext" BYTEA CHECK (octet_length("ciphertext") >= 28),
    "updated_by" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deleted_at" TIMESTAMPTZ(3),
    CONSTRAINT "secret_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "secret_scope_matches_repo" CHECK (
      ("repo_id" IS NULL AND "scope" = 'org') OR ("repo_id" IS NOT NULL AND "scope" = 'repo:' || "repo_id"::text)),
    CONSTRAINT "secret_deleted_has_no_value" CHECK (("deleted_at" IS NULL) = ("ciphertext" IS NOT NULL))
);
CREATE UNIQUE INDEX "secret_org_scope_name_key" ON "secret" ("org_id", "scope", "name");
