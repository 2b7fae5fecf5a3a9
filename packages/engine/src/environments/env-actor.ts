import { DomainError, type Role } from "@kiln/domain";
import type { PolicyCache } from "./policy-cache.ts";

/**
 * Who acts on environments: always inside one org (every query filters by orgId). userId/login
 * are the member (a dashboard session, a personal API token, or the CLI's --as); an org token has
 * none, and then can neither approve nor be told apart from any other requester.
 */
export interface EnvActor {
  orgId: string;
  role: Role;
  userId: string | null;
  login: string | null;
  /** The audit trail's actor string: `web:<login>`, `token:<id>`, `cli:<user>`. */
  actor: string;
}

/** What the decision service needs besides the database. */
export interface EnvDeps {
  /** This Kiln's builder id prefix: `<KILN_PUBLIC_URL>/builders/` (the provenance gate's "builder is this Kiln"). */
  builderPrefix: string;
  /** A fact query that takes longer is unavailable (statement_timeout), and its gate fails per the fail mode. */
  gateTimeoutMs: number;
  policies: PolicyCache;
}

export function builderPrefixFor(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/builders/`;
}

export function requireAdmin(a: EnvActor, what: string): void {
  if (a.role !== "admin") throw new DomainError("AUTH.FORBIDDEN", `only an org admin can ${what}`);
}

export function requireOperator(a: EnvActor, what: string): void {
  if (a.role !== "admin" && a.role !== "member") throw new DomainError("AUTH.FORBIDDEN", `auditors cannot ${what}`);
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
