// What a secret may be called (issue 16). A secret reaches a step as an environment variable under
// its own name, so the name must be a portable variable name; KILN_* is the platform's own
// namespace (KILN_JOB_ID, ...) and may not be shadowed by a secret.
import { reservedEnvNameProblem } from "../shared/env-names.ts";

export const SECRET_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;

/** Why `name` cannot be a secret's name, or null when it can. */
export function secretNameProblem(name: string): string | null {
  if (!SECRET_NAME_PATTERN.test(name)) return "must match [A-Za-z_][A-Za-z0-9_]* and be at most 100 characters";
  if (/^KILN_/i.test(name)) return "must not start with KILN_ (reserved for the platform)";
  return reservedEnvNameProblem(name);
}

/** Largest value accepted for one secret (bytes, UTF-8). Environment variables are not for blobs. */
export const MAX_SECRET_VALUE_BYTES = 48 * 1024;

/** A key-encryption key's state (secret_kek.state): one active at a time; rotation disables the old one. */
export const SECRET_KEK_STATES = ["active", "disabled"] as const;
