import { listDeployments } from "@kiln/engine";
import { z } from "zod";
import { services } from "@/server/context.ts";
import { deployCallerOf } from "@/server/http/deploy-caller.ts";
import { json, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

const lock = z.object({
  lock_id: z.string(),
  deployment_id: z.string(),
  run_id: z.string(),
  job_id: z.string().nullable(),
  attempt_id: z.string().nullable(),
  epoch: z.number().nullable(),
  acquired_at: z.string(),
  release_after: z.string().nullable(),
  manual_release: z.boolean(),
  state: z.enum(["held_running", "kill_bound_pending", "manual_release_required"]),
  why: z.string(),
});
const deployment = z.object({
  id: z.string(),
  state: z.string(),
  kind: z.string(),
  promotion_id: z.string(),
  pointer_seq: z.string(),
  generation_id: z.string(),
  digest: z.string(),
  commit_sha: z.string(),
  run_id: z.string().nullable(),
  run_outcome: z.string().nullable(),
  actor: z.string(),
  created_at: z.string(),
  started_at: z.string().nullable(),
  finished_at: z.string().nullable(),
});

export const GET = route({
  path: "/v1/environments/{env_id}/deployments",
  summary: "The environment's deployment lock (holder and why it is held) and its deploy history (docs/adr/0033)",
  auth: "api_token",
  responses: {
    200: {
      description: "lock and history",
      schema: z.object({ lock: lock.nullable(), deployments: z.array(deployment) }),
    },
  },
  uuidParams: ["envId"],
  handler: async ({ req, params }) => {
    const { db } = services();
    return json(200, await listDeployments(db, await deployCallerOf(db, req), params.envId ?? ""));
  },
});
