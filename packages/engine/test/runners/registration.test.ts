import { randomUUID } from "node:crypto";
import { AGENT_PROTOCOL_VERSION } from "@kiln/domain";
import { describe, expect, it } from "vitest";
import { registerSession } from "../../src/dispatch/register-session.ts";
import { setPoolPolicy } from "../../src/dispatch/pool-policy.ts";
import { createOrgPool, createRegistrationToken, listRunners, registerRunner } from "../../src/runners/index.ts";
import { TEST_CFG, useTestDb } from "../support.ts";
import { claim, orgWithPool, registeredHost, runOnPool } from "./support.ts";

// Registration (issue 22, ADR 0034) on PostgreSQL, attacked from the hostile side: spent, expired,
// revoked and other orgs' tokens, other orgs' and shared pools, and incompatible agents.

const t = useTestDb();

const reg = (token: string, pool = "gpu", protocolVersion = AGENT_PROTOCOL_VERSION) =>
  registerRunner(t.db(), { token, pool, name: "h1", labels: ["gpu", "cuda12"], protocolVersion });

describe("runner registration", () => {
  it("exchanges a token once for a credential bound to the org and pool; a second use is refused", async () => {
    const a = await orgWithPool(t.db());
    const tok = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", actor: "test:admin" });
    expect(tok).toMatchObject({ pool: a.orgPool, singleUse: true });
    const r = await reg(tok.token);
    expect(r).toMatchObject({ org: a.slug, pool: a.orgPool, name: "h1", labels: ["cuda12", "gpu"] });
    expect(r.credential).toMatch(/^kagent_/);
    const cred = await t.db().$queryRaw<{ org_id: string; pool: string }[]>`
      SELECT t.org_id, t.pool FROM agent_token t JOIN runner h ON h.agent_token_id = t.id WHERE h.id = ${r.runnerId}::uuid`;
    expect(cred[0]).toEqual({ org_id: a.orgId, pool: a.orgPool });
    await expect(reg(tok.token)).rejects.toMatchObject({ code: "REGISTRATION.TOKEN_SPENT" });
    const spent = await t.db().$queryRaw<{ uses: number; spent: boolean }[]>`
      SELECT uses, spent_at IS NOT NULL AS spent FROM runner_registration_token WHERE id = ${tok.id}::uuid`;
    expect(spent[0]).toEqual({ uses: 1, spent: true });
    const audit = await t.db().$queryRaw<{ kind: string }[]>`
      SELECT kind FROM audit_event WHERE org_id = ${a.orgId}::uuid AND kind LIKE 'runner.%' ORDER BY seq`;
    expect(audit.map((e) => e.kind)).toEqual(["runner.registration_token_created", "runner.registered"]);
  });

  it("lets exactly one of two concurrent exchanges of a single-use token win", async () => {
    const a = await orgWithPool(t.db());
    const tok = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", actor: "test:admin" });
    const results = await Promise.allSettled([reg(tok.token), reg(tok.token), reg(tok.token)]);
    expect(results.filter((x) => x.status === "fulfilled")).toHaveLength(1);
    const runners = await listRunners(t.db(), { orgId: a.orgId, leaseTtlMs: 60_000 });
    expect(runners).toHaveLength(1);
  });

  it("refuses expired, unknown and revoked tokens, and a token used for another pool without spending it", async () => {
    const a = await orgWithPool(t.db());
    const old = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", expiresInMinutes: 1, actor: "x" });
    await t.db().$executeRaw`UPDATE runner_registration_token SET created_at = now() - interval '2 hours',
      expires_at = now() - interval '1 hour' WHERE id = ${old.id}::uuid`;
    await expect(reg(old.token)).rejects.toMatchObject({ code: "REGISTRATION.TOKEN_EXPIRED" });
    await expect(reg("kreg_not-a-token")).rejects.toMatchObject({ code: "REGISTRATION.TOKEN_INVALID" });
    const revoked = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", actor: "x" });
    await t.db().$executeRaw`UPDATE runner_registration_token SET revoked_at = now() WHERE id = ${revoked.id}::uuid`;
    await expect(reg(revoked.token)).rejects.toMatchObject({ code: "REGISTRATION.TOKEN_INVALID" });
    // Another org's pool named with this org's token: refused, and the token is still good.
    const b = await orgWithPool(t.db());
    const tok = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", actor: "x" });
    await expect(reg(tok.token, b.orgPool)).rejects.toMatchObject({ code: "REGISTRATION.POOL_MISMATCH" });
    expect((await reg(tok.token)).pool).toBe(a.orgPool);
  });

  it("makes tokens only for the org's own pools: never a shared pool or another org's", async () => {
    const a = await orgWithPool(t.db());
    const b = await orgWithPool(t.db());
    await expect(
      createRegistrationToken(t.db(), { orgId: a.orgId, pool: b.orgPool, actor: "x" }),
    ).rejects.toMatchObject({ code: "POOL.NOT_FOUND" });
    await setPoolPolicy(t.db(), {
      name: `shared-${randomUUID().slice(0, 6)}`,
      minIsolation: "process",
      development: true,
      actor: "op",
    });
    await expect(createRegistrationToken(t.db(), { orgId: a.orgId, pool: a.pool, actor: "x" })).rejects.toMatchObject({
      code: "POOL.NOT_FOUND",
    });
    await expect(
      createOrgPool(t.db(), { orgId: a.orgId, name: "gpu", isolation: "process", actor: "x" }),
    ).rejects.toMatchObject({ code: "POOL.EXISTS" });
  });

  it("lets a multi-use token register several hosts", async () => {
    const a = await orgWithPool(t.db());
    const tok = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", singleUse: false, actor: "x" });
    await reg(tok.token);
    await reg(tok.token);
    expect(await listRunners(t.db(), { orgId: a.orgId, leaseTtlMs: 60_000 })).toHaveLength(2);
  });

  it("refuses an incompatible agent at registration and at session start, naming both versions", async () => {
    const a = await orgWithPool(t.db());
    const tok = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", actor: "x" });
    const refused = reg(tok.token, "gpu", 99);
    await expect(refused).rejects.toMatchObject({ code: "AGENT.PROTOCOL_INCOMPATIBLE" });
    await expect(refused).rejects.toThrow(
      `agent protocol version 99 is not supported by this control plane (protocol 1..${AGENT_PROTOCOL_VERSION})`,
    );
    // The refusal spent nothing: the same token registers a compatible agent.
    const host = await reg(tok.token);
    const agent = await t.db().$queryRaw<
      { id: string }[]
    >`SELECT agent_token_id AS id FROM runner WHERE id = ${host.runnerId}::uuid`;
    const session = registerSession(t.db(), TEST_CFG, {
      agentTokenId: agent[0]?.id ?? "",
      pool: host.pool,
      body: {
        hostname: "h1",
        capacity: 1,
        labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" },
        protocol_version: 0,
      },
    });
    await expect(session).rejects.toThrow("agent protocol version 0 is not supported");
  });

  it("tells each session's agent the registries: credentials to the platform's pools only (issue 30)", async () => {
    const registries = {
      "registry.example.com": {
        username: "ci",
        password: "platform-pull-secret",
        endpoint: "https://mirror.example.com",
      },
      "127.0.0.1:5000": {},
    };
    const body = {
      hostname: "h1",
      capacity: 1,
      labels: { os: "linux", arch: "x64", resource_class: "small", isolation: "process" as const },
      protocol_version: AGENT_PROTOCOL_VERSION,
    };
    // The platform's own pool (an operator's hosts): the whole list.
    const a = await orgWithPool(t.db());
    const platform = await registerSession(t.db(), TEST_CFG, {
      agentTokenId: a.agentTokenId,
      pool: a.pool,
      body,
      registries,
    });
    expect(platform.registries).toEqual(registries);
    // The org's own pool (a machine the org controls): every registry and mirror, no platform secret.
    const tok = await createRegistrationToken(t.db(), { orgId: a.orgId, pool: "gpu", actor: "test:admin" });
    const host = await reg(tok.token);
    const agent = await t.db().$queryRaw<{ id: string }[]>`
      SELECT agent_token_id AS id FROM runner WHERE id = ${host.runnerId}::uuid`;
    const own = await registerSession(t.db(), TEST_CFG, {
      agentTokenId: agent[0]!.id,
      pool: host.pool,
      body,
      registries,
    });
    expect(own.registries).toEqual({
      "registry.example.com": { endpoint: "https://mirror.example.com" },
      "127.0.0.1:5000": {},
    });
    expect(JSON.stringify(own)).not.toContain("platform-pull-secret");
  });

  it("runs the org's labelled job on its registered host, and nothing of another org's", async () => {
    const a = await orgWithPool(t.db());
    const host = await registeredHost(t.db(), a);
    const runId = await runOnPool(t.db(), a);
    // Another org's job naming this org's pool never reaches the host.
    const b = await orgWithPool(t.db());
    await t.db().$executeRaw`UPDATE job_run SET pool = ${a.orgPool} WHERE run_id = ${await runOnPool(t.db(), b)}::uuid`;
    const ticket = await claim(t.db(), host.sessionId);
    expect(ticket).toMatchObject({ runId, orgId: a.orgId });
    expect(await claim(t.db(), host.sessionId)).toBeNull();
    const [view] = await listRunners(t.db(), { orgId: a.orgId, leaseTtlMs: 60_000 });
    expect(view).toMatchObject({
      id: host.runnerId,
      pool: a.orgPool,
      labels: ["gpu"],
      isolation: "process",
      state: "online",
      protocolVersion: AGENT_PROTOCOL_VERSION,
      agentVersion: "test-agent/1",
      slots: { inUse: 1, total: 4 },
    });
    expect(view?.lastHeartbeatAt).not.toBeNull();
  });
});
