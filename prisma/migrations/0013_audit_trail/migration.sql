-- The audit trail (issues 16, 18, 19, 21): one append-only table of who did what to which org's
-- configuration, credentials and secrets. Rows are written in the same transaction as the change
-- they describe (recordAuditEvent in packages/engine/src/audit), so a change without its record
-- cannot commit. The database refuses UPDATE, DELETE and TRUNCATE: not even the platform's own
-- role can rewrite history (a superuser could drop the trigger; that is what the transparency log
-- is for).
CREATE TABLE "audit_event" (
    -- Ordered: the order events were committed in is the order auditors read them in.
    "seq" BIGSERIAL NOT NULL,
    "id" UUID NOT NULL DEFAULT gen_random_uuid(),
    -- Null for platform-wide events (an operator rotating a platform key).
    "org_id" UUID REFERENCES "org"("id"),
    -- Namespaced, e.g. secret.read, secret.set, id_token.minted, token.created, egress.allowed.
    "kind" TEXT NOT NULL CHECK ("kind" ~ '^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$'),
    -- Who: `web:<login>`, `cli:<user>`, `token:<id>`, `agent:<attempt id>`, `system:<worker>`.
    "actor" TEXT NOT NULL CHECK (length("actor") BETWEEN 1 AND 200),
    -- What it was done to (a secret's scoped name, a token id, a promotion id), for filtering.
    "subject" TEXT,
    -- The facts of the event; never a secret value.
    "data" JSONB NOT NULL DEFAULT '{}',
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "audit_event_pkey" PRIMARY KEY ("seq"),
    CONSTRAINT "audit_event_id_key" UNIQUE ("id")
);
CREATE INDEX "audit_event_org_seq_idx" ON "audit_event"("org_id", "seq");
CREATE INDEX "audit_event_org_kind_seq_idx" ON "audit_event"("org_id", "kind", "seq");

CREATE FUNCTION "audit_event_append_only"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_event is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
CREATE TRIGGER "audit_event_no_update_delete" BEFORE UPDATE OR DELETE ON "audit_event"
  FOR EACH ROW EXECUTE FUNCTION "audit_event_append_only"();
CREATE TRIGGER "audit_event_no_truncate" BEFORE TRUNCATE ON "audit_event"
  FOR EACH STATEMENT EXECUTE FUNCTION "audit_event_append_only"();
