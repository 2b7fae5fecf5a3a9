import { admitGithubWebhook, observeTriggerPersistence } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { webForgeConfig } from "@/server/env.ts";
import { machineJson, route } from "@/server/http/route.ts";
import { webhookAccepted, webhookAnswered } from "@/server/http/schemas/resources.ts";

export const dynamic = "force-dynamic";

// GitHub caps payloads at 25 MB.
export const POST = route({
  path: "/v1/webhooks/github",
  summary: "GitHub push / pull_request (opened, synchronize, reopened) / ping",
  description:
    "Deduplicated on X-GitHub-Delivery: a redelivery answers the first delivery's run. A disconnected repo's deliveries are recorded and ignored.",
  auth: "webhook_signature",
  rawBody: { contentType: "application/json", description: "GitHub's webhook payload" },
  headers: {
    "X-GitHub-Event": { description: "push, pull_request or ping", required: true },
    "X-GitHub-Delivery": { description: "the delivery's GUID", required: true },
    "X-Hub-Signature-256": { description: "sha256=<HMAC of the body>", required: true },
  },
  responses: {
    202: { description: "a run was admitted", schema: webhookAccepted },
    200: { description: "a duplicate delivery, or one that starts nothing", schema: webhookAnswered },
  },
  maxBytes: 25 * 1024 * 1024,
  handler: async ({ req, rawBody }) => {
    const startedAt = Date.now();
    const r = await admitGithubWebhook(services().db, {
      rawBody,
      signature: req.headers.get("x-hub-signature-256"),
      event: req.headers.get("x-github-event"),
      deliveryId: req.headers.get("x-github-delivery"),
      retention: services().retention,
      // The App's webhook secret and API: an installation id is believed and confirmed only through them.
      forge: webForgeConfig(),
    });
    if (r.status === 202) observeTriggerPersistence("webhook", startedAt);
    return machineJson(r.status, {
      run_id: r.runId,
      duplicate: r.duplicate,
      ...("ignored" in r && r.ignored ? { ignored: r.ignored } : {}),
    });
  },
});
