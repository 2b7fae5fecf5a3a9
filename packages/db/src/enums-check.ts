// Compile-time proof that the state values the database accepts (CHECK constraints in
// prisma/migrations/0001_init) are exactly the domain's unions. If a union changes, this file stops
// compiling until the migration and this list change with it.
import type {
  AttemptStatus,
  EgressDecisionValue,
  EgressRuleAction,
  JobStatus,
  Outcome,
  Role,
  RunStatus,
  TrustClass,
} from "@kiln/domain";

type Exact<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const assertExact = <T extends true>(_t?: T) => undefined;

assertExact<Exact<RunStatus, "pending" | "running" | "cancelling" | "completed">>();
assertExact<Exact<JobStatus, "pending" | "ready" | "running" | "completed">>();
assertExact<Exact<AttemptStatus, "running" | "completed">>();
assertExact<
  Exact<Outcome, "success" | "user_failure" | "platform_failure" | "cancelled" | "timed_out" | "blocked_by_policy">
>();
assertExact<Exact<Role, "admin" | "member" | "auditor">>();
assertExact<Exact<TrustClass, "trusted" | "untrusted">>();
// prisma/migrations/0006_egress
assertExact<Exact<EgressDecisionValue, "allowed" | "denied">>();
assertExact<Exact<EgressRuleAction, "allow" | "remove">>();
