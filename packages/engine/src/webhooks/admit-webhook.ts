import { sqlPool, type Db } from "@kiln/db";
import {
  assertNever,
  DomainError,
  parseGithubEnvelope,
  parseGithubEvent,
  peekGithubActorId,
  type GithubEvent,
  type RetentionWindows,
} from "@kiln/domain";
import type { ForgeConfig } from "../forge/index.ts";
import { acceptRun } from "./accept-run.ts";
import { checkForgeIdentity } from "./check-forge-identity.ts";
import { closePullRequest, recordIgnored, type Delivery, type WebhookResult } from "./webhook-deliveries.ts";
import { authenticateDelivery } from "./webhook-repo.ts";
import { hasWellFormedSignature } from "./verify-signature.ts";

export type { WebhookResult } from "./webhook-deliveries.ts";

/**
 * POST /v1/webhooks/github. Acceptance (delivery row, run, freeze request) is one transaction
 * committed before the 202, and the delivery id is unique: 20 concurrent copies or a redelivery
 * after a crash all resolve to the one run. Nothing is written unless the signature verifies.
 * The payload's meaning is the domain's pure parser (forge/github-event.ts); this verifies, looks
 * up and persists.
 */
export async function admitGithubWebhook(
  db: Db,
  req: {
    rawBody: Uint8Array;
    signature: string | null;
    event: string | null;
    deliveryId: string | null;
    /** The platform's windows, for the metadata stamp of the runs a closed PR cancels. */
    retention?: RetentionWindows;
    /** The forge settings: the App's webhook secret and API, to believe and confirm an installation. */
    forge?: Pick<ForgeConfig, "apiUrl" | "requestTimeoutMs" | "app">;
  },
): Promise<WebhookResult> {
  if (!hasWellFormedSignature(req.signature)) {
    throw new DomainError("WEBHOOK.BAD_SIGNATURE", "missing or malformed X-Hub-Signature-256 (sha256 is required)");
  }
  const json = parseJsonBody(req.rawBody);
  const base = parseGithubEnvelope(json);
  const sql = sqlPool(db);
  // Plain SQL, two statements (ADR 0015): the repo with the sender's membership, then acceptance
  // as one statement. The sender is peeked at before the payload is validated so that membership
  // comes with the repo lookup; validation still happens only after the signature verifies.
  // Membership is by the forge's user id, never the login (a renamed login is re-registrable).
  const peeked = peekGithubActorId(json);
  const { repo, viaApp } = await authenticateDelivery(sql, req, base.repository.full_name, peeked);
  if (!req.deliveryId || req.deliveryId.length > 200)
    throw new DomainError("WEBHOOK.BAD_PAYLOAD", "missing X-GitHub-Delivery");
  const delivery: Delivery = { id: req.deliveryId, event: req.event ?? "" };

  await checkForgeIdentity(sql, req.forge, repo, viaApp, base);
  // A disconnected repo (docs/adr/0029) admits nothing; its deliveries are recorded as ignored so
  // missed-delivery recovery counts them as processed rather than asking for them again.
  const ev: GithubEvent = repo.disconnected
    ? { kind: "ignored", reason: "repo is disconnected" }
    : parseGithubEvent(delivery.event, json);
  switch (ev.kind) {
    case "pr_closed":
      return closePullRequest(db, sql, repo.id, delivery, ev.number, req.retention);
    case "ignored":
      return recordIgnored(sql, repo.id, delivery, ev.reason);
    case "run":
      return acceptRun(sql, repo, delivery, ev.run, peeked);
    default:
      return assertNever(ev, "github event");
  }
}

function parseJsonBody(rawBody: Uint8Array): unknown {
  try {
    return JSON.parse(Buffer.from(rawBody).toString("utf8"));
  } catch {
    throw new DomainError("WEBHOOK.BAD_PAYLOAD", "body is not JSON");
  }
}
