// The broker's decision (issue 16), pure: which of a job's declared secrets it receives. Trust
// class is the run's, fixed at admission (ADR 0005); an untrusted run receives none, whatever it
// declares. Undeclared secrets are never candidates: the caller passes only declared names' rows.
import type { TrustClass } from "../tenants/index.ts";

export const SECRET_WITHHELD_UNTRUSTED = "SECRET.WITHHELD_UNTRUSTED";
export const SECRET_WITHHELD_MESSAGE = "secrets withheld: untrusted run (fork or non-member)";
/** A declared secret that is not set: never a reason to guess, and blocking when required. */
export const SECRET_NOT_SET = "SECRET.NOT_SET";

export interface StoredSecretRef {
  name: string;
  /** `env:<environment_id>` (issue 18): only a deploy run of that environment is given these. */
  scope: "org" | `repo:${string}` | `env:${string}`;
  version: number;
}

export type SecretDelivery =
  | { kind: "none" }
  | { kind: "withheld"; cause: typeof SECRET_WITHHELD_UNTRUSTED; message: string; required: boolean }
  | { kind: "deliver"; picks: StoredSecretRef[]; missing: string[]; required: boolean };

export function decideSecretDelivery(input: {
  trustClass: TrustClass;
  declared: readonly string[];
  required: boolean;
  /** Rows for declared names only, org- and repo-scoped. */
  stored: readonly StoredSecretRef[];
}): SecretDelivery {
  if (input.declared.length === 0) return { kind: "none" };
  if (input.trustClass !== "trusted")
    return {
      kind: "withheld",
      cause: SECRET_WITHHELD_UNTRUSTED,
      message: SECRET_WITHHELD_MESSAGE,
      required: input.required,
    };
  const declared = new Set(input.declared);
  const picks: StoredSecretRef[] = [];
  const missing: string[] = [];
  for (const name of input.declared) {
    const candidates = input.stored.filter((s) => s.name === name && declared.has(s.name));
    // The narrower scope is the more specific intent: an environment's secret overrides its repo's,
    // a repo's its org's. The caller passes env-scoped rows only for that environment's deploy runs.
    const pick =
      candidates.find((s) => s.scope.startsWith("env:")) ??
      candidates.find((s) => s.scope.startsWith("repo:")) ??
      candidates.find((s) => s.scope === "org");
    if (pick) picks.push(pick);
    else missing.push(name);
  }
  return { kind: "deliver", picks, missing, required: input.required };
}
