import { generateKeyPairSync } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import examples from "@octokit/webhooks-examples/api.github.com/index.json" with { type: "json" };
import type { Db } from "@kiln/db";
import { isDomainError } from "@kiln/domain";
import { admitGithubWebhook } from "../../src/webhooks/admit-webhook.ts";
import { DEFAULT_FORGE_CONFIG, type ForgeConfig } from "../../src/forge/forge-config.ts";
import { parseSecretsKey } from "../../src/forge/secret-box.ts";

/** A recorded payload from @octokit/webhooks-examples (GitHub's own examples), deep-copied. */
function example(event: string, pick: (e: Record<string, unknown>) => boolean = () => true): Record<string, any> {
  const group = (examples as { name: string; examples: Record<string, unknown>[] }[]).find((g) => g.name === event);
  const e = group?.examples.find(pick);
  if (!e) throw new Error(`no ${event} example`);
  return structuredClone(e) as Record<string, any>;
}

export function pushPayload(repoName: string, sha: string, senderId: number): Record<string, any> {
  const p = example("push");
  p.after = sha;
  p.ref = "refs/heads/main";
  p.deleted = false;
  p.repository.full_name = repoName;
  p.sender.id = senderId;
  return p;
}

export function prPayload(
  repoName: string,
  action: string,
  number: number,
  sha: string,
  senderId: number,
): Record<string, any> {
  const p = example("pull_request", (e) => e.action === (action === "synchronize" ? "synchronize" : action));
  p.action = action;
  p.number = number;
  p.pull_request.number = number;
  p.pull_request.head.sha = sha;
  p.pull_request.head.repo = { ...(p.pull_request.head.repo ?? {}), full_name: repoName };
  p.pull_request.base.repo.full_name = repoName;
  p.repository.full_name = repoName;
  p.sender.id = senderId;
  // The examples were captured from an App's deliveries; a repo's own hook carries no installation
  // (and Kiln refuses one on a delivery not signed with the App's secret, issue 28).
  delete p.installation;
  return p;
}

const SECRETS_KEY = parseSecretsKey(Buffer.alloc(32, 7).toString("base64"));

export function forgeCfg(apiUrl: string, extra: Partial<ForgeConfig> = {}): ForgeConfig {
  return {
    ...DEFAULT_FORGE_CONFIG,
    apiUrl,
    publicUrl: "https://kiln.example.com",
    secretsKey: SECRETS_KEY,
    requestTimeoutMs: 5_000,
    ...extra,
  };
}

export function appKeys(): { privateKeyPem: string; publicKeyPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
}

/**
 * Kiln's webhook endpoint for engine tests: the real admission use case behind a bare HTTP server
 * (the web app's route is the same call). `down` makes it answer 503, as a stopped Kiln would fail.
 */
export async function startWebhookEndpoint(
  db: Db,
): Promise<{ url: string; down: boolean; forge: ForgeConfig | undefined; stop: () => Promise<void> }> {
  const state: { down: boolean; forge: ForgeConfig | undefined } = { down: false, forge: undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      if (state.down) {
        res.writeHead(503).end();
        return;
      }
      admitGithubWebhook(db, {
        rawBody: Buffer.concat(chunks),
        signature: (req.headers["x-hub-signature-256"] as string | undefined) ?? null,
        event: (req.headers["x-github-event"] as string | undefined) ?? null,
        deliveryId: (req.headers["x-github-delivery"] as string | undefined) ?? null,
        ...(state.forge ? { forge: state.forge } : {}),
      }).then(
        (r) => res.writeHead(r.status, { "content-type": "application/json" }).end(JSON.stringify(r)),
        (err: unknown) => res.writeHead(isDomainError(err) ? 401 : 500).end(String(err)),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/webhooks/github`;
  return {
    url,
    get down() {
      return state.down;
    },
    set down(v: boolean) {
      state.down = v;
    },
    get forge() {
      return state.forge;
    },
    set forge(v: ForgeConfig | undefined) {
      state.forge = v;
    },
    stop: () => new Promise<void>((r) => server.close(() => r())),
  };
}
