import { z } from "zod";
import { isKnownTimeZone } from "../schedules/index.ts";
import { FAIL_MODES } from "./environment-states.ts";

// The gate policy document (issue 18, ADR 0032): held by the control plane per environment,
// versioned (each change a new immutable row), set by org admins, never read from the workflow
// file the gated author edits. snake_case because it is what `kiln env policy --file` and
// PUT /v1/environments/{id}/policy take.

export const GATE_KINDS = [
  "required_outcomes",
  "provenance",
  "previous_environment",
  "approvals",
  "freeze_windows",
  "allowed_refs",
] as const;
export type GateKind = (typeof GATE_KINDS)[number];

const refPattern = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9._\-/*]+$/, "a ref pattern: letters, digits, . _ - / and * (** spans /)");
const login = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/, "a member's login");
const hhmm = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, "HH:MM, 24-hour");
const DAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"] as const;
export type Weekday = (typeof DAYS)[number];
export const WEEKDAYS: readonly Weekday[] = DAYS;

/** Common to every gate: may a break-glass override set it aside, and does a rollback evaluate it. */
const gateBase = { overridable: z.boolean().optional(), on_rollback: z.boolean().optional() };

const recurringWindow = z.strictObject({
  time_zone: z.string().min(1).max(64),
  days: z.array(z.enum(DAYS)).min(1).max(7).optional(),
  start: hhmm,
  end: hhmm,
  name: z.string().max(100).optional(),
});
const absoluteWindow = z.strictObject({
  start_at: z.iso.datetime({ offset: true }),
  end_at: z.iso.datetime({ offset: true }),
  name: z.string().max(100).optional(),
});
export type RecurringWindow = z.infer<typeof recurringWindow>;
export type AbsoluteWindow = z.infer<typeof absoluteWindow>;

export const gatePolicySchema = z.strictObject({
  /** closed: an unevaluable gate denies (GATE.UNAVAILABLE). open is refused for production. */
  fail_mode: z.enum(FAIL_MODES).default("closed"),
  gates: z.strictObject({
    required_outcomes: z.strictObject({ ...gateBase }).optional(),
    provenance: z
      .strictObject({
        /** The producing run must have been trusted (default true). */
        require_trusted: z.boolean().optional(),
        /** The attested source ref must match one of these (default: any). */
        source_refs: z.array(refPattern).min(1).max(50).optional(),
        on_rollback: z.boolean().optional(),
      })
      .optional(),
    previous_environment: z
      .strictObject({
        soak_seconds: z
          .number()
          .int()
          .min(0)
          .max(90 * 86_400),
        ...gateBase,
      })
      .optional(),
    approvals: z
      .strictObject({
        count: z.number().int().min(1).max(10),
        /** Named members (logins) whose approvals count; with `role`, either qualifies. */
        members: z.array(login).min(1).max(100).optional(),
        /** At least this role: admin (admins only) or member (admins and members). Auditors never. */
        role: z.enum(["admin", "member"]).optional(),
        /** The requester and the commit's author cannot approve (default true). */
        separation_of_duties: z.boolean().optional(),
        ...gateBase,
      })
      .optional(),
    freeze_windows: z
      .strictObject({
        windows: z
          .array(z.union([recurringWindow, absoluteWindow]))
          .min(1)
          .max(50),
        ...gateBase,
      })
      .optional(),
    allowed_refs: z.strictObject({ patterns: z.array(refPattern).min(1).max(50), ...gateBase }).optional(),
  }),
  overrides: z.strictObject({ second_approver: z.boolean() }).optional(),
});
export type GatePolicy = z.infer<typeof gatePolicySchema>;
export type GatePolicyInput = z.input<typeof gatePolicySchema>;

export interface PolicyTarget {
  name: string;
  production: boolean;
  /** The environment comes after another in the promotion order. */
  hasPrevious: boolean;
}

/** An environment is production when it is named so or marked so. */
export function isProduction(env: { name: string; production: boolean }): boolean {
  return env.production || env.name === "production";
}

/**
 * A new environment's policy (issue 18): required outcomes and provenance; with a previous
 * environment also that gate (no soak); production additionally one approval with separation of
 * duties, and overrides that need a second admin.
 */
export function defaultPolicy(env: PolicyTarget): GatePolicy {
  const prod = isProduction(env);
  return {
    fail_mode: "closed",
    gates: {
      required_outcomes: {},
      provenance: {},
      ...(env.hasPrevious ? { previous_environment: { soak_seconds: 0 } } : {}),
      ...(prod ? { approvals: { count: 1, separation_of_duties: true } } : {}),
    },
    ...(prod ? { overrides: { second_approver: true } } : {}),
  };
}

export type PolicyProblem = { path: string; message: string };

/**
 * Parses and checks a policy for an environment: the schema, then the rules the schema cannot
 * say (production fails closed; a previous-environment gate needs a previous environment; time
 * zones exist; absolute windows end after they start).
 */
export function parsePolicy(
  input: unknown,
  env: PolicyTarget,
): { ok: true; policy: GatePolicy } | { ok: false; problems: PolicyProblem[] } {
  const parsed = gatePolicySchema.safeParse(input);
  if (!parsed.success)
    return {
      ok: false,
      problems: parsed.error.issues.map((i) => ({
        path: i.path.map(String).join(".") || "policy",
        message: i.message,
      })),
    };
  const p = parsed.data;
  const problems: PolicyProblem[] = [];
  if (isProduction(env) && p.fail_mode === "open")
    problems.push({ path: "fail_mode", message: "production always fails closed" });
  if (p.gates.previous_environment && !env.hasPrevious)
    problems.push({
      path: "gates.previous_environment",
      message: `${env.name} comes after no environment (create it with --after)`,
    });
  for (const [i, w] of (p.gates.freeze_windows?.windows ?? []).entries()) {
    if ("time_zone" in w && !isKnownTimeZone(w.time_zone))
      problems.push({
        path: `gates.freeze_windows.windows.${i}.time_zone`,
        message: `unknown time zone ${w.time_zone}`,
      });
    if ("start_at" in w && Date.parse(w.end_at) <= Date.parse(w.start_at))
      problems.push({ path: `gates.freeze_windows.windows.${i}`, message: "end_at must be after start_at" });
  }
  return problems.length ? { ok: false, problems } : { ok: true, policy: p };
}
