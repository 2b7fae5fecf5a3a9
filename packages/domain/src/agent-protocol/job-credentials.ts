import { z } from "zod";
import { AUDIENCE_PATTERN } from "../identity/index.ts";

// What a running job asks for with its job token at start: secrets, a checkout credential, ID tokens.
// ---- Secrets (issue 16, docs/adr/0025). With the job token, once, at job start:
//   POST /v1/agent/jobs/{job_id}/secrets   secretsRequest -> secretsResponse | 409 stale
// Every delivered value's audit record is committed before this answer is sent. `withheld` names
// why nothing was delivered (an untrusted run); `required` is the job's secrets_required.
export const secretsRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const secretsResponse = z.object({
  delivered: z.array(z.object({ name: z.string(), version: z.number().int(), value: z.string() })),
  withheld: z.object({ cause: z.string(), message: z.string() }).nullable(),
  missing: z.array(z.string()),
  required: z.boolean(),
});
export type SecretsResponseWire = z.infer<typeof secretsResponse>;
// Private checkouts (issue 28, docs/adr/0028 amended). With the job token, once, at job start:
//   POST /v1/agent/jobs/{job_id}/source-credential  sourceCredentialRequest -> sourceCredentialResponse | 409 stale
// The repo's forge credential for the agent's own git fetch, only for a current attempt and only
// for an http(s) clone URL on the forge's own host. `credential` null: fetch as before; `reason`
// says why there is none (shown only if the forge then refuses). Never logged, never in a step.
export const sourceCredentialRequest = z.object({ epoch: z.number().int().min(1) }).strict();
export const sourceCredentialResponse = z.object({
  credential: z
    .object({
      username: z.string().min(1).max(200),
      password: z.string().min(1).max(4096),
      /** Whose credential (the repo id): a host mirror filled with it serves that repo alone. */
      scope: z.string().min(1).max(200),
    })
    .nullable(),
  reason: z.string().max(500).nullable(),
});
export type SourceCredentialResponseWire = z.infer<typeof sourceCredentialResponse>;
// Workload identity (issue 16, docs/adr/0024): the agent asks for an ID token on a step's behalf.
//   POST /v1/agent/jobs/{job_id}/id-token  job token  idTokenRequest -> idTokenResponse | 409 not current
// The step reaches the agent, never this endpoint: the agent checks the attempt's request token first.
export const idTokenRequest = z
  .object({
    epoch: z.number().int().min(1),
    audience: z.string().regex(AUDIENCE_PATTERN, "audience must be 1-200 printable characters"),
  })
  .strict();
export const idTokenResponse = z.object({ value: z.string(), expires_at: z.string() });
