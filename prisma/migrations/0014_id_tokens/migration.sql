-- Workload identity (issue 16, docs/adr/0024-workload-identity.md): Kiln signs per-attempt OIDC ID
-- tokens with ES256 keys and records every token it mints, so a relying party inside the platform
-- (and RFC 7662 introspection for those outside) can refuse a token whose attempt is over.

-- Signing keys, by key id, kept like job-token keys (ADR 0018): the newest unretired key signs; a
-- retired key stays published in the JWKS until verify_until, the expiry of the last token it
-- signed. The private key (PKCS#8 DER) is sealed with AES-256-GCM under the identity KEK named by
-- kek_id: private_key_sealed = nonce(12) || ciphertext || tag(16), AAD "kiln-id-token-key:v1:<kid>:<kek_id>".
CREATE TABLE "id_token_key" (
    "kid" TEXT NOT NULL CHECK ("kid" ~ '^[A-Za-z0-9_-]{1,40}$'),
    "alg" TEXT NOT NULL DEFAULT 'ES256' CHECK ("alg" = 'ES256'),
    "public_jwk" JSONB NOT NULL,
    "private_key_sealed" BYTEA NOT NULL,
    "kek_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "retired_at" TIMESTAMPTZ(3),
    "verify_until" TIMESTAMPTZ(3),
    CONSTRAINT "id_token_key_pkey" PRIMARY KEY ("kid"),
    CONSTRAINT "id_token_key_retired_check" CHECK (("retired_at" IS NULL) = ("verify_until" IS NULL))
);
-- At most one signing key: a rotation racing another fails instead of forking the keyring.
CREATE UNIQUE INDEX "id_token_key_one_active" ON "id_token_key" ((true)) WHERE "retired_at" IS NULL;

-- Every minted token: what introspection and the platform's relying parties look a jti up in, to
-- learn whether its attempt is still current. Rows go once the token has expired (the workers).
CREATE TABLE "id_token" (
    "jti" UUID NOT NULL,
    "org_id" UUID NOT NULL REFERENCES "org"("id") ON DELETE RESTRICT ON UPDATE CASCADE,
    "run_id" UUID NOT NULL,
    "job_id" UUID NOT NULL,
    "attempt_id" UUID NOT NULL REFERENCES "attempt"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    "epoch" INTEGER NOT NULL,
    -- No foreign key: a key row is deleted once its overlap has passed, when its tokens are expired.
    "kid" TEXT NOT NULL,
    "audience" TEXT NOT NULL,
    "issued_at" TIMESTAMPTZ(3) NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    CONSTRAINT "id_token_pkey" PRIMARY KEY ("jti"),
    CONSTRAINT "id_token_window_check" CHECK ("expires_at" > "issued_at")
);
CREATE INDEX "id_token_attempt_id_idx" ON "id_token"("attempt_id");
CREATE INDEX "id_token_kid_expires_at_idx" ON "id_token"("kid", "expires_at");
CREATE INDEX "id_token_expires_at_idx" ON "id_token"("expires_at");
