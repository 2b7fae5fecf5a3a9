import { withTx, type Db, type Tx } from "@kiln/db";
import {
  AGENT_PROTOCOL_VERSION,
  DomainError,
  protocolIncompatibility,
  REGISTRATION_TOKEN_TTL,
  RUNNER_LABEL_PATTERN,
  RUNNER_NAME,
} from "@kiln/domain";
import { recordAuditEvent } from "../audit/index.ts";
import { hashSecret, newSecret } from "../identity/index.ts";
import { recordRunnerTransition } from "./runner-journal.ts";

// Self-hosted runner registration (issue 22, ADR 0034). An org admin makes a short-lived token for
// one of the org's own pools; a host exchanges it once for its own host credential. Only hashes
// are stored; the token and the credential are each shown once.

export interface RegistrationTokenView {
  id: string;
  token: string;
  org: string;
  pool: string;
  singleUse: boolean;
  expiresAt: string;
}

/** The org's pool by `<org>/<name>` or `<name>`: an org pool, or a platform pool dedicated to the org. */
async function ownPool(tx: Tx | Db, orgId: string, orgSlug: string, pool: string): Promise<string> {
  const rows = await tx.$queryRaw<{ name: string }[]>`
    SELECT name FROM pool WHERE owner_org_id = ${orgId}::uuid AND (name = ${pool} OR name = ${`${orgSlug}/${pool}`})
    ORDER BY (name = ${pool}) DESC LIMIT 1`;
  const name = rows[0]?.name;
  // A shared pool, another org's pool and a missing one read alike: hosts join only the org's own.
  if (!name)
    throw new DomainError(
      "POOL.NOT_FOUND",
      `the org has no pool named ${pool} (npm run kiln -- pool create ${orgSlug}/<name>)`,
    );
  return name;
}

export async function createRegistrationToken(
  db: Db,
  input: { orgId: string; pool: string; singleUse?: boolean; expiresInMinutes?: number; actor: string },
): Promise<RegistrationTokenView> {
  const minutes = input.expiresInMinutes ?? REGISTRATION_TOKEN_TTL.defaultMinutes;
  if (!Number.isInteger(minutes) || minutes < 1 || minutes > REGISTRATION_TOKEN_TTL.maxMinutes)
    throw new DomainError("REQUEST.INVALID", `expires_in_minutes must be 1..${REGISTRATION_TOKEN_TTL.maxMinutes}`);
  const singleUse = input.singleUse ?? true;
  const token = newSecret("kreg");
  return withTx(db, "create-registration-token", async (tx) => {
    const orgs = await tx.$queryRaw<{ slug: string }[]>`SELECT slug FROM org WHERE id = ${input.orgId}::uuid`;
    const slug = orgs[0]?.slug;
    if (!slug) throw new DomainError("ORG.NOT_FOUND", "no such org");
    const pool = await ownPool(tx, input.orgId, slug, input.pool);
    const rows = await tx.$queryRaw<{ id: string; expires_at: Date }[]>`
      INSERT INTO runner_registration_token (org_id, pool, token_hash, single_use, expires_at, created_by)
      VALUES (${input.orgId}::uuid, ${pool}, ${hashSecret(token)}, ${singleUse}, now() + make_interval(mins => ${minutes}::int), ${input.actor})
      RETURNING id, expires_at`;
    const row = rows[0];
    if (!row) throw new Error("runner_registration_token insert returned nothing");
    await recordAuditEvent(tx, {
      orgId: input.orgId,
      kind: "runner.registration_token_created",
      actor: input.actor,
      subject: row.id,
      data: { pool, single_use: singleUse, expires_at: row.expires_at.toISOString() },
    });
    return { id: row.id, token, org: slug, pool, singleUse, expiresAt: row.expires_at.toISOString() };
  });
}

export interface RegistrationInput {
  /** The registration token, as the Authorization header carried it. */
  token: string;
  pool: string;
  name: string;
  labels: string[];
  isolation?: "process" | "microvm" | undefined;
  protocolVersion: number;
  agentVersion?: string | undefined;
}

export interface Registration {
  runnerId: string;
  credential: string;
  org: string;
  pool: string;
  name: string;
  labels: string[];
  protocolVersion: number;
}

/**
 * Spends the token and creates the host credential and its runner row, all in one transaction: the
 * guarded UPDATE is the spend (a concurrent second exchange of a single-use token waits on the row
 * lock, re-reads `spent_at` and gets nothing back). A refusal later in the transaction (another
 * pool) rolls the spend back, so a typo does not burn the token.
 */
export async function registerRunner(db: Db, input: RegistrationInput): Promise<Registration> {
  const incompatible = protocolIncompatibility(input.protocolVersion);
  if (incompatible) throw new DomainError("AGENT.PROTOCOL_INCOMPATIBLE", incompatible);
  if (!RUNNER_NAME.test(input.name))
    throw new DomainError("REQUEST.INVALID", "name must be 1-100 characters from A-Z a-z 0-9 . _ -");
  const labels = [...new Set(input.labels)].sort();
  if (labels.some((l) => !RUNNER_LABEL_PATTERN.test(l)))
    throw new DomainError("REQUEST.INVALID", "labels must be 1-50 characters from a-z 0-9 . _ -");
  const hash = hashSecret(input.token);
  const credential = newSecret("kagent");
  return withTx(db, "register-runner", async (tx) => {
    const spent = await tx.$queryRaw<{ id: string; org_id: string; pool: string; slug: string }[]>`
      UPDATE runner_registration_token t SET uses = uses + 1, spent_at = CASE WHEN single_use THEN now() ELSE spent_at END
      FROM org o
      WHERE t.token_hash = ${hash} AND o.id = t.org_id AND t.revoked_at IS NULL AND t.expires_at > now()
        AND (NOT t.single_use OR t.spent_at IS NULL)
      RETURNING t.id, t.org_id, t.pool, o.slug`;
    const tok = spent[0];
    if (!tok) throw await whyRefused(tx, hash);
    if (input.pool !== tok.pool && `${tok.slug}/${input.pool}` !== tok.pool)
      throw new DomainError(
        "REGISTRATION.POOL_MISMATCH",
        `this registration token is for pool ${tok.pool}, not ${input.pool}`,
      );
    const agent = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO agent_token (pool, org_id, name, token_hash)
      VALUES (${tok.pool}, ${tok.org_id}::uuid, ${input.name}, ${hashSecret(credential)}) RETURNING id`;
    const agentId = agent[0]?.id;
    if (!agentId) throw new Error("agent_token insert returned nothing");
    const actor = `registration:${tok.id}`;
    const runners = await tx.$queryRaw<{ id: string }[]>`
      INSERT INTO runner (org_id, pool, name, labels, isolation, protocol_version, agent_version, agent_token_id,
                          registration_token_id, created_by)
      VALUES (${tok.org_id}::uuid, ${tok.pool}, ${input.name}, ${labels}::text[], ${input.isolation ?? null},
              ${input.protocolVersion}, ${input.agentVersion ?? null}, ${agentId}::uuid, ${tok.id}::uuid, ${actor})
      RETURNING id`;
    const runnerId = runners[0]?.id;
    if (!runnerId) throw new Error("runner insert returned nothing");
    await recordRunnerTransition(tx, { orgId: tok.org_id, runnerId, from: null, to: "online", reason: "registered" });
    await recordAuditEvent(tx, {
      orgId: tok.org_id,
      kind: "runner.registered",
      actor,
      subject: runnerId,
      data: { name: input.name, pool: tok.pool, labels, protocol_version: input.protocolVersion },
    });
    return {
      runnerId,
      credential,
      org: tok.slug,
      pool: tok.pool,
      name: input.name,
      labels,
      protocolVersion: AGENT_PROTOCOL_VERSION,
    };
  });
}

/** Why a token was not spendable: named precisely for its holder (they already hold the secret). */
async function whyRefused(tx: Tx, hash: string): Promise<DomainError> {
  const rows = await tx.$queryRaw<{ spent: boolean; expired: boolean; revoked: boolean }[]>`
    SELECT (single_use AND spent_at IS NOT NULL) AS spent, expires_at <= now() AS expired, revoked_at IS NOT NULL AS revoked
    FROM runner_registration_token WHERE token_hash = ${hash}`;
  const r = rows[0];
  if (!r || r.revoked) return new DomainError("REGISTRATION.TOKEN_INVALID", "invalid registration token");
  if (r.spent)
    return new DomainError(
      "REGISTRATION.TOKEN_SPENT",
      "this registration token was already used; ask an org admin for a new one",
    );
  return new DomainError(
    "REGISTRATION.TOKEN_EXPIRED",
    "this registration token has expired; ask an org admin for a new one",
  );
}
