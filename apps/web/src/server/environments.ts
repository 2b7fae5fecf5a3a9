import { builderPrefixFor, PolicyCache, type Caller, type EnvActor, type EnvDeps } from "@kiln/engine";
import { env } from "./env.ts";

// The decision service's process-wide dependencies (issue 18): one warm policy cache per server
// process (entries are immutable policy versions, so it never needs invalidating), the builder id
// this Kiln's attestor signs as, and the per-gate timeout.

const g = globalThis as unknown as { __kilnEnvDeps?: EnvDeps };

export function envDeps(): EnvDeps {
  if (g.__kilnEnvDeps) return g.__kilnEnvDeps;
  const e = env();
  g.__kilnEnvDeps = {
    builderPrefix: builderPrefixFor(e.KILN_PUBLIC_URL),
    gateTimeoutMs: e.KILN_GATE_TIMEOUT_MS,
    policies: new PolicyCache(),
  };
  return g.__kilnEnvDeps;
}

/** An API caller as the environments use cases see it: a personal token carries its member. */
export function tokenActor(c: Caller): EnvActor {
  return {
    orgId: c.orgId,
    role: c.role,
    userId: c.userId ?? null,
    login: c.login ?? null,
    actor: `token:${c.tokenId}`,
  };
}

/** A dashboard session inside its org (the tRPC tenant). */
export function sessionActor(t: { orgId: string; role: EnvActor["role"]; userId: string; login: string }): EnvActor {
  return { orgId: t.orgId, role: t.role, userId: t.userId, login: t.login, actor: `web:${t.login}` };
}
