import { MAX_SECRET_VALUE_BYTES, SECRET_NAME_PATTERN } from "@kiln/domain";
import { z } from "zod";

/** Where a secret lives: the org (repoId null) or one of its repositories. */
export const secretRef = z.object({
  repoId: z.string().uuid("not a repository id").nullable(),
  name: z
    .string()
    .trim()
    .min(1, "enter a name")
    .regex(SECRET_NAME_PATTERN, "letters, digits and _, not starting with a digit (at most 100)"),
});

export const setSecretInput = secretRef.extend({
  value: z.string().min(1, "enter a value").max(MAX_SECRET_VALUE_BYTES, `at most ${MAX_SECRET_VALUE_BYTES} bytes`),
});
