import { RETENTION_CLASSES } from "@kiln/domain";
import { z } from "zod";

// Wire schemas of the public API's other resources (docs/adr/0029): artifacts, repos, pools, the
// webhook receiver's answers, health. As for runs.ts, the API tests parse real answers with them.

const iso = z.string().describe("ISO 8601 timestamp");

export const jobArtifacts = z.object({
  artifacts: z.array(
    z.object({
      id: z.uuid().describe("GET /v1/artifacts/{artifact_id}/download"),
      name: z.string(),
      size: z.number().int(),
      sha256: z.string(),
      attempt_epoch: z.number().int(),
      attestation_state: z.string().describe("pending, logged, verified, quarantined (issue 17)").optional(),
      quarantine_reason: z.string().nullable().optional(),
      retention_class: z
        .enum(RETENTION_CLASSES)
        .nullable()
        .describe("release, default_branch or other, from the run's trigger and ref at seal time (issue 21)"),
      expires_at: iso.nullable().describe("when retention evicts it, unless a pointer, its history or a hold keeps it"),
      expired_at: iso.nullable().describe("set once evicted: downloads answer 410 ARTIFACT.EXPIRED"),
    }),
  ),
});

export const redirect = {
  description: "a short-lived presigned URL of the object store (the bytes never pass through Kiln)",
  headers: { Location: "the presigned URL; valid for KILN_ARTIFACT_DOWNLOAD_URL_TTL_S seconds (default 300)" },
};

export const orgRepos = z.object({
  repos: z.array(
    z.object({
      id: z.uuid(),
      full_name: z.string(),
      clone_url: z.string(),
      workflow_path: z.string(),
      default_branch: z.string(),
      created_at: iso,
      disconnected_at: iso.nullable().describe("set while the repo is disconnected: history only, no new runs"),
      last_delivery: z
        .object({
          delivery_id: z.string(),
          event: z.string(),
          outcome: z.string().describe("accepted (a run was admitted) or ignored"),
          run_id: z.uuid().nullable(),
          received_at: iso,
        })
        .nullable(),
      forge_credential: z
        .object({
          state: z.enum(["none", "token", "app"]),
          last_checked_at: iso.nullable().optional(),
          problem: z.string().nullable().optional(),
        })
        .describe("how Kiln posts commit statuses for the repo; none: it posts none"),
    }),
  ),
});

export const pools = z.object({
  pools: z.array(
    z.object({
      name: z.string(),
      min_isolation: z.string(),
      tenancy: z.enum(["org", "shared"]),
      owner_org: z.string().nullable(),
      development: z.boolean(),
      admits_untrusted: z.boolean(),
      untrusted_on_process: z.boolean(),
      configured: z.boolean(),
    }),
  ),
});

export const webhookAccepted = z.object({ run_id: z.uuid(), duplicate: z.literal(false) });
export const webhookAnswered = z.object({
  run_id: z.uuid().nullable(),
  duplicate: z.boolean(),
  ignored: z.string().optional().describe("why the delivery starts nothing (ping, an action that runs nothing)"),
});

export const health = z.object({ ok: z.boolean() });

export const openApiDocument = z
  .object({ openapi: z.literal("3.1.0"), info: z.object({ title: z.string(), version: z.string() }) })
  .loose()
  .describe("an OpenAPI 3.1 document");
