-- Separation of duties by person (issue 28, docs/adr/0032 "Amended (issue 28)"): a run records the
-- member who triggered it (a dashboard session, a personal API token's member, the CLI's --as, a
-- forge sender who is a member), so an approver is compared by member id, never by login or actor
-- string. NULL: no member can be named (an org token, a schedule, a non-member's push, a run made
-- before this column); separation of duties then counts the author against every approver.
-- Existing rows keep NULL: their artifacts need the override or a re-run to pass an approval gate
-- with separation of duties, which fails closed rather than guessing a person from a login.
ALTER TABLE "workflow_run"
    ADD COLUMN "actor_user_id" UUID REFERENCES "app_user"("id") ON DELETE SET NULL;
