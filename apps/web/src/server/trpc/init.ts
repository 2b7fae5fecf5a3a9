import type { Db } from "@kiln/db";
import type { EnvDeps } from "@kiln/engine";
import { isDomainError } from "@kiln/domain";
import { initTRPC, TRPCError } from "@trpc/server";
import { z } from "zod";
import { ADMIN_ROLES, ALL_ROLES, OPERATOR_ROLES, resolveTenant } from "./engine-views.ts";

const AUDIT_ROLES: typeof ALL_ROLES = ["admin", "auditor"];
import { isUnavailable, trpcCodeFor } from "./error-map.ts";

export interface TrpcContext {
  db: Db;
  /** From the session JWT: who, never what they may see (that is read per request). */
  user: { id: string; login: string } | null;
  /** The decision service's deps (issue 18); tests pass their own, servers use the process's. */
  envDeps?: EnvDeps;
  /**
   * Charges an org-scoped call to the user's and the org's buckets (docs/adr/0044); throws
   * RATE.LIMITED (TOO_MANY_REQUESTS) when over. Servers pass the process's; tests may omit it.
   */
  rateLimit?: (tenant: { userId: string; orgId: string; slug: string }) => Promise<void>;
}

const t = initTRPC.context<TrpcContext>().create({
  errorFormatter: ({ shape, error }) => {
    const domainCode = isDomainError(error.cause) ? error.cause.code : null;
    // Unexpected errors keep their details in the server log (route handler onError), not in the answer.
    const hide = error.code === "INTERNAL_SERVER_ERROR";
    // Input that fails its schema: a readable sentence plus per-field messages (forms show them
    // inline), instead of the validator's JSON dump of issues.
    const issues = inputIssues(error.cause);
    const fieldErrors = issues ? Object.fromEntries(issues.map((i) => [i.field, i.message])) : null;
    const message = hide
      ? "internal error"
      : issues
        ? issues.map((i) => `${i.field}: ${i.message}`).join("; ")
        : shape.message;
    return {
      ...shape,
      message,
      data: { code: shape.data.code, httpStatus: shape.data.httpStatus, domainCode, fieldErrors },
    };
  },
});

/** Issues of a failed input parse (zod, or any Standard Schema validator), keyed by field path. */
function inputIssues(cause: unknown): { field: string; message: string }[] | null {
  const issues = (cause as { issues?: unknown } | null | undefined)?.issues;
  if (!Array.isArray(issues) || issues.length === 0) return null;
  return issues.map((i: { path?: readonly (PropertyKey | { key: PropertyKey })[]; message?: string }) => ({
    field: (i.path ?? []).map((p) => String(typeof p === "object" ? p.key : p)).join(".") || "input",
    message: i.message ?? "invalid",
  }));
}

export const router = t.router;

/** Turns DomainErrors into tRPC errors with their mapped code (and the DB being down into 503). */
const mapErrors = t.middleware(async ({ next }) => {
  const res = await next();
  if (res.ok) return res;
  const cause = res.error.cause;
  if (isDomainError(cause)) throw new TRPCError({ code: trpcCodeFor(cause), message: cause.message, cause });
  if (res.error.code === "INTERNAL_SERVER_ERROR" && isUnavailable(cause ?? res.error)) {
    throw new TRPCError({
      code: "SERVICE_UNAVAILABLE",
      message: "the control plane's database is unavailable; retry later",
      cause: res.error,
    });
  }
  return res;
});

/** No sign-in: public data only (the transparency log, which anyone may audit). */
export const publicProcedure = t.procedure.use(mapErrors);

export const authedProcedure = publicProcedure.use(({ ctx, next }) => {
  if (!ctx.user) throw new TRPCError({ code: "UNAUTHORIZED", message: "sign in to continue" });
  return next({ ctx: { user: ctx.user } });
});

const orgSlug = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "not an org slug");

/**
 * Every org-scoped procedure takes `org` (the slug from the URL) and gets `ctx.tenant`: the org id
 * and role from ONE query joining org and the user's membership, filtered by the roles allowed.
 * Views then filter by that org id in their own queries.
 */
function tenantProcedure(roles: typeof ALL_ROLES) {
  return authedProcedure.input(z.object({ org: orgSlug })).use(async ({ ctx, input, next }) => {
    const tenant = await resolveTenant(ctx.db, {
      userId: ctx.user.id,
      login: ctx.user.login,
      orgSlug: input.org,
      roles,
    });
    // After the tenant query, so the org bucket is the org's and an outsider spends nobody's budget.
    await ctx.rateLimit?.({ userId: ctx.user.id, orgId: tenant.orgId, slug: tenant.slug });
    return next({ ctx: { tenant } });
  });
}

/** Any member (admin, member, auditor) may read. */
export const readProcedure = tenantProcedure(ALL_ROLES);
/** Cancel and retry: admins and members; auditors are refused in the tenant query itself. */
export const operatorProcedure = tenantProcedure(OPERATOR_ROLES);
/** Org settings (entitlements, egress allow-list): admins only, refused in the tenant query itself. */
export const adminProcedure = tenantProcedure(ADMIN_ROLES);
/** The audit trail (issue 16): admins and auditors, refused in the tenant query itself. */
export const auditProcedure = tenantProcedure(AUDIT_ROLES);
