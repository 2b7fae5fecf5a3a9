-- The transparency log (issue 17, docs/adr/0026-transparency-log.md): an RFC 6962 Merkle tree over
-- append-only entries, its stored perfect-subtree hashes, signed checkpoints and the log's key.
-- Nothing here is ever updated or deleted: triggers refuse it, so a bug or an operator's stray
-- statement cannot rewrite history that checkpoints have already committed to.

-- One row: the tree size. Its row lock (taken by tlog_append) makes appends one writer at a time,
-- so indices are dense 0..n-1 in commit order.
CREATE TABLE "tlog_sequencer" (
    "id" BOOLEAN NOT NULL DEFAULT true CHECK ("id"),
    "size" BIGINT NOT NULL DEFAULT 0 CHECK ("size" >= 0),
    CONSTRAINT "tlog_sequencer_pkey" PRIMARY KEY ("id")
);
INSERT INTO "tlog_sequencer" ("id", "size") VALUES (true, 0);

-- Leaf data is exactly "body": GET /v1/tlog/entries/{idx} serves it and the leaf hash is
-- SHA-256(0x00 || body). 65535 bytes at most: C2SP entry bundles frame entries with a uint16.
CREATE TABLE "tlog_entry" (
    "idx" BIGINT NOT NULL CHECK ("idx" >= 0),
    "kind" TEXT NOT NULL CHECK ("kind" ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
    -- One leaf per statement whatever pg-boss redelivers: the caller's deterministic key.
    "dedupe_key" TEXT NOT NULL CHECK (length("dedupe_key") BETWEEN 1 AND 300),
    "body" BYTEA NOT NULL CHECK (octet_length("body") BETWEEN 1 AND 65535),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tlog_entry_pkey" PRIMARY KEY ("idx"),
    CONSTRAINT "tlog_entry_dedupe_key_key" UNIQUE ("dedupe_key")
);

-- Every perfect subtree of the tree: level 0 holds the leaf hashes, level l the hash of the 2^l
-- leaves from idx * 2^l. Proofs and tiles read O(log^2 n) of these, never rehash the log.
CREATE TABLE "tlog_node" (
    "level" SMALLINT NOT NULL CHECK ("level" BETWEEN 0 AND 63),
    "idx" BIGINT NOT NULL CHECK ("idx" >= 0),
    "hash" BYTEA NOT NULL CHECK (octet_length("hash") = 32),
    CONSTRAINT "tlog_node_pkey" PRIMARY KEY ("level", "idx")
);

-- Signed C2SP checkpoints; a size is signed once and sizes never decrease (trigger below).
CREATE TABLE "tlog_checkpoint" (
    "size" BIGINT NOT NULL CHECK ("size" >= 0),
    "root_hash" BYTEA NOT NULL CHECK (octet_length("root_hash") = 32),
    "note" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tlog_checkpoint_pkey" PRIMARY KEY ("size")
);

-- The log's Ed25519 key: the public half in the clear, the private half sealed with AES-256-GCM
-- under a key-encryption key the workers hold (never the database). One key per log: its name is
-- the log's origin, and a new key would be a new log.
CREATE TABLE "tlog_key" (
    "key_hash" TEXT NOT NULL CHECK ("key_hash" ~ '^[0-9a-f]{8}$'),
    "origin" TEXT NOT NULL,
    "public_key" BYTEA NOT NULL CHECK (octet_length("public_key") = 32),
    "sealed_private_key" BYTEA NOT NULL,
    "kek_id" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "tlog_key_pkey" PRIMARY KEY ("key_hash")
);
CREATE UNIQUE INDEX "tlog_key_one_key" ON "tlog_key" ((true));

CREATE FUNCTION "tlog_refuse_change"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'the transparency log is append-only: % on % refused', TG_OP, TG_TABLE_NAME
    USING ERRCODE = 'P0001';
END $$;

CREATE TRIGGER "tlog_entry_append_only" BEFORE UPDATE OR DELETE ON "tlog_entry"
  FOR EACH ROW EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_entry_no_truncate" BEFORE TRUNCATE ON "tlog_entry"
  FOR EACH STATEMENT EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_node_append_only" BEFORE UPDATE OR DELETE ON "tlog_node"
  FOR EACH ROW EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_node_no_truncate" BEFORE TRUNCATE ON "tlog_node"
  FOR EACH STATEMENT EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_checkpoint_append_only" BEFORE UPDATE OR DELETE ON "tlog_checkpoint"
  FOR EACH ROW EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_checkpoint_no_truncate" BEFORE TRUNCATE ON "tlog_checkpoint"
  FOR EACH STATEMENT EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_key_append_only" BEFORE UPDATE OR DELETE ON "tlog_key"
  FOR EACH ROW EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_key_no_truncate" BEFORE TRUNCATE ON "tlog_key"
  FOR EACH STATEMENT EXECUTE FUNCTION "tlog_refuse_change"();
CREATE TRIGGER "tlog_sequencer_no_truncate" BEFORE TRUNCATE ON "tlog_sequencer"
  FOR EACH STATEMENT EXECUTE FUNCTION "tlog_refuse_change"();

-- The size only ever grows by one (tlog_append) and its row is never deleted.
CREATE FUNCTION "tlog_sequencer_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' OR NEW."size" <> OLD."size" + 1 THEN
    RAISE EXCEPTION 'the transparency log sequencer only counts up by one' USING ERRCODE = 'P0001';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "tlog_sequencer_guard" BEFORE UPDATE OR DELETE ON "tlog_sequencer"
  FOR EACH ROW EXECUTE FUNCTION "tlog_sequencer_guard"();

-- Checkpoint sizes never decrease and never pass the log.
CREATE FUNCTION "tlog_checkpoint_guard"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM "tlog_checkpoint" WHERE "size" >= NEW."size") THEN
    RAISE EXCEPTION 'checkpoint sizes never decrease (size % refused)', NEW."size" USING ERRCODE = 'P0001';
  END IF;
  IF NEW."size" > (SELECT "size" FROM "tlog_sequencer") THEN
    RAISE EXCEPTION 'checkpoint size % is beyond the log', NEW."size" USING ERRCODE = 'P0001';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER "tlog_checkpoint_guard" BEFORE INSERT ON "tlog_checkpoint"
  FOR EACH ROW EXECUTE FUNCTION "tlog_checkpoint_guard"();

-- Appends one entry, or finds the one already appended under the same dedupe key. In one
-- statement, so the sequencer row is locked for one round trip of work (it stays locked until the
-- caller's transaction ends: append last). The leaf hash and every parent the new leaf completes
-- are stored with it (RFC 6962: 0x00 leaf prefix, 0x01 node prefix).
CREATE FUNCTION "tlog_append"(p_kind TEXT, p_body BYTEA, p_dedupe_key TEXT)
  RETURNS TABLE ("idx" BIGINT, "created" BOOLEAN, "same_body" BOOLEAN)
  LANGUAGE plpgsql AS $$
DECLARE
  n BIGINT;
  i BIGINT;
  lvl SMALLINT := 0;
  h BYTEA;
  sibling BYTEA;
  existing RECORD;
BEGIN
  SELECT s."size" INTO n FROM "tlog_sequencer" s WHERE s."id" FOR UPDATE;
  -- Read after the lock: every earlier append has committed or rolled back by now, so a replay
  -- finds its entry here instead of failing on the unique constraint.
  SELECT e."idx", e."body" INTO existing FROM "tlog_entry" e WHERE e."dedupe_key" = p_dedupe_key;
  IF FOUND THEN
    RETURN QUERY SELECT existing."idx", false, existing."body" = p_body;
    RETURN;
  END IF;
  INSERT INTO "tlog_entry" ("idx", "kind", "dedupe_key", "body") VALUES (n, p_kind, p_dedupe_key, p_body);
  h := sha256('\x00'::bytea || p_body);
  INSERT INTO "tlog_node" ("level", "idx", "hash") VALUES (0, n, h);
  i := n;
  WHILE i % 2 = 1 LOOP
    SELECT t."hash" INTO STRICT sibling FROM "tlog_node" t WHERE t."level" = lvl AND t."idx" = i - 1;
    h := sha256('\x01'::bytea || sibling || h);
    i := (i - 1) / 2;
    lvl := lvl + 1;
    INSERT INTO "tlog_node" ("level", "idx", "hash") VALUES (lvl, i, h);
  END LOOP;
  UPDATE "tlog_sequencer" SET "size" = n + 1 WHERE "id";
  RETURN QUERY SELECT n, true, true;
END $$;
