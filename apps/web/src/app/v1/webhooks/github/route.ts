import { admitGithubWebhook } from "@kiln/engine";
import { services } from "@/server/context.ts";
import { machineJson, route } from "@/server/http/route.ts";

export const dynamic = "force-dynamic";

// GitHub caps payloads at 25 MB.
export const POST = route({
  maxBytes: 25 * 1024 * 1024,
  handler: async ({ req, rawBody }) => {
    const r = await admitGithubWebhook(services().db, {
      rawBody,
      signature: req.headers.get("x-hub-signature-256"),
      event: req.headers.get("x-github-event"),
      deliveryId: req.headers.get("x-github-delivery"),
    });
    return machineJson(r.status, {
      run_id: r.runId,
      duplicate: r.duplicate,
      ...("ignored" in r && r.ignored ? { ignored: r.ignored } : {}),
    });
  },
});
