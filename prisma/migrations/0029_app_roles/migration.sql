-- Issue 28 (docs/adr/0026 "Amended (issue 28): database roles"): the web app and the workers stop
-- connecting as the role that owns the tables. An owner can DROP TRIGGER, so whoever held the web
-- app's credential could switch off the transparency log's append-only triggers and rewrite it.
-- Two group roles (NOLOGIN) get data rights only: neither owns anything, so neither can ALTER, DROP
-- or TRUNCATE a table, drop a trigger or create a table. The web role only reads the log's tables:
-- the workers alone append (tlog_append), sign checkpoints and create the log key.
--
-- Roles are cluster-wide while this migration runs once per database (every test database is a
-- clone of one migrated template, npm run up's cluster may hold several): create only if missing,
-- tolerating a concurrent creator. A migrating role that may not create roles (an operator's
-- database) is told so and carries on: the grants below are applied once the roles exist, by
-- running SELECT kiln_grant_app_roles() as the owner (docs/adr/0026 "Amended (issue 28): database roles").
DO $$
DECLARE
  r TEXT;
BEGIN
  FOREACH r IN ARRAY ARRAY['kiln_web', 'kiln_workers'] LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = r);
    IF NOT (SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user) THEN
      RAISE NOTICE 'role % is missing and % may not create roles: create it (NOLOGIN), then run SELECT kiln_grant_app_roles()', r, current_user;
      CONTINUE;
    END IF;
    BEGIN
      EXECUTE format('CREATE ROLE %I NOLOGIN', r);
    EXCEPTION WHEN duplicate_object OR unique_violation THEN
      NULL; -- another database's migration created it meanwhile
    END;
  END LOOP;
END $$;

-- Idempotent, run by the owner: here, after pg-boss has created its schema (the harness and the
-- test template call it again then), and after creating the roles by hand. A later migration that
-- adds a table the web app must only read adds it to the list below (CREATE OR REPLACE).
CREATE FUNCTION "kiln_grant_app_roles"() RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  s TEXT := current_schema();
  t TEXT;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kiln_web')
     OR NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'kiln_workers') THEN
    RAISE NOTICE 'roles kiln_web/kiln_workers are missing: no grants applied';
    RETURN;
  END IF;
  -- Before PostgreSQL 15 every role could create tables in public; the owner keeps that right.
  EXECUTE format('REVOKE CREATE ON SCHEMA %I FROM PUBLIC', s);
  EXECUTE format('GRANT USAGE ON SCHEMA %I TO kiln_web, kiln_workers', s);
  EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA %I TO kiln_web, kiln_workers', s);
  EXECUTE format('GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA %I TO kiln_web, kiln_workers', s);
  EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA %I TO kiln_web, kiln_workers', s);
  -- Tables, sequences and functions later migrations create (as this same owner) get the same.
  EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO kiln_web, kiln_workers', s);
  EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT USAGE, SELECT ON SEQUENCES TO kiln_web, kiln_workers', s);
  EXECUTE format('ALTER DEFAULT PRIVILEGES IN SCHEMA %I GRANT EXECUTE ON FUNCTIONS TO kiln_web, kiln_workers', s);
  -- The migration history is the migrator's alone.
  IF to_regclass(format('%I._prisma_migrations', s)) IS NOT NULL THEN
    EXECUTE format('REVOKE ALL ON TABLE %I._prisma_migrations FROM kiln_web, kiln_workers', s);
  END IF;
  -- The transparency log: the web app serves it and never writes it.
  FOREACH t IN ARRAY ARRAY['tlog_sequencer', 'tlog_entry', 'tlog_node', 'tlog_checkpoint', 'tlog_key'] LOOP
    EXECUTE format('REVOKE INSERT, UPDATE, DELETE, TRUNCATE ON TABLE %I.%I FROM kiln_web', s, t);
  END LOOP;
  -- Nor does it read the sealed private half of the log key (sealed under a KEK only workers hold).
  EXECUTE format('REVOKE SELECT ON TABLE %I.tlog_key FROM kiln_web', s);
  EXECUTE format('GRANT SELECT (key_hash, origin, public_key, kek_id, created_at) ON TABLE %I.tlog_key TO kiln_web', s);
  EXECUTE format('REVOKE ALL ON FUNCTION %I.kiln_grant_app_roles() FROM PUBLIC, kiln_web, kiln_workers', s);
  -- pg-boss's schema is created and migrated by the owner (start-platform, the test template,
  -- workers on the owner's URL); both roles send, fetch and complete jobs: data rights only.
  IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = 'pgboss') THEN
    GRANT USAGE ON SCHEMA pgboss TO kiln_web, kiln_workers;
    GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA pgboss TO kiln_web, kiln_workers;
    GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA pgboss TO kiln_web, kiln_workers;
    GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA pgboss TO kiln_web, kiln_workers;
    ALTER DEFAULT PRIVILEGES IN SCHEMA pgboss GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO kiln_web, kiln_workers;
    ALTER DEFAULT PRIVILEGES IN SCHEMA pgboss GRANT USAGE, SELECT ON SEQUENCES TO kiln_web, kiln_workers;
    ALTER DEFAULT PRIVILEGES IN SCHEMA pgboss GRANT EXECUTE ON FUNCTIONS TO kiln_web, kiln_workers;
  END IF;
END $$;

SELECT "kiln_grant_app_roles"();
