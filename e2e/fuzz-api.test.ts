import { sign } from "@octokit/webhooks-methods";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Platform } from "./support/platform.ts";

// Bad input gets a clear 4xx with {error: {code, message}} and writes nothing: never a 500, a hang
// or a half-written row. Generated inputs go through the production server.
const p = new Platform();
let t: Awaited<ReturnType<Platform["seedTenant"]>>;

beforeAll(async () => {
  await p.start();
  t = await p.seedTenant("fuzz", { ".kiln/workflow.yaml": 'version: 1\njobs:\n  - name: a\n    steps: ["true"]\n' });
}, 180_000);
afterAll(async () => {
  await p.stop();
});

async function counts() {
  const r = await p.db.$queryRaw<{ runs: bigint; deliveries: bigint; keys: bigint }[]>`
    SELECT (SELECT count(*) FROM workflow_run) AS runs, (SELECT count(*) FROM webhook_delivery) AS deliveries,
           (SELECT count(*) FROM idempotency_key) AS keys`;
  return r[0];
}

function expectClientError(status: number, json: any) {
  expect(status).toBeGreaterThanOrEqual(400);
  expect(status).toBeLessThan(500);
  expect(typeof json?.error?.code).toBe("string");
  expect(typeof json?.error?.message).toBe("string");
  expect(json.error.message.length).toBeGreaterThan(0);
}

const jsonish = fc.oneof(
  fc.string(),
  fc.json(),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.uint8Array({ maxLength: 300 }).map((b) => Buffer.from(b).toString("latin1")),
);

describe("fuzzed manual trigger", () => {
  it("malformed bodies are 4xx and create nothing", async () => {
    const before = await counts();
    await fc.assert(
      fc.asyncProperty(jsonish, fc.option(fc.string({ maxLength: 300 }), { nil: undefined }), async (body, key) => {
        const headers: Record<string, string> =
          key === undefined ? {} : { "idempotency-key": key.replace(/[^\x20-\x7e]/g, "") };
        const r = await p.api("POST", `/v1/repos/${t.repoId}/workflow-runs`, t.token, body, headers);
        // A generated body can be valid by chance only if it has the exact shape; it never does here
        // unless it carries workflow_path and a 40/64-hex commit_sha, which fast-check won't produce.
        expectClientError(r.status, r.json);
      }),
      { numRuns: 60 },
    );
    expect(await counts()).toEqual(before);
  });

  it("structurally plausible but invalid fields are rejected with a 4xx and a message", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            workflow_path: fc.oneof(
              fc.constant("../etc/passwd"),
              fc.constant("/abs.yaml"),
              fc.constant(""),
              fc.string({ maxLength: 600 }),
            ),
            commit_sha: fc.oneof(fc.string(), fc.stringMatching(/^[0-9a-f]{39}$/)),
            inputs: fc.oneof(fc.constant(null), fc.array(fc.string()), fc.dictionary(fc.string(), fc.object())),
          },
          { requiredKeys: [] },
        ),
        async (body) => {
          const r = await p.api("POST", `/v1/repos/${t.repoId}/workflow-runs`, t.token, body, {
            "idempotency-key": "fuzz-fields",
          });
          expectClientError(r.status, r.json);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe("fuzzed webhook", () => {
  it("random bodies and headers are 4xx, never 5xx, and nothing unsigned is written", async () => {
    const before = await counts();
    await fc.assert(
      fc.asyncProperty(
        jsonish,
        fc.option(fc.string({ maxLength: 80 }), { nil: null }),
        fc.option(fc.string({ maxLength: 30 }), { nil: null }),
        async (body, sig, event) => {
          const headers: Record<string, string> = {
            "content-type": "application/json",
            "x-github-delivery": `fz-${Math.random()}`,
          };
          if (sig !== null) headers["x-hub-signature-256"] = sig.replace(/[^\x20-\x7e]/g, "");
          if (event !== null) headers["x-github-event"] = event.replace(/[^\x20-\x7e]/g, "");
          const res = await fetch(`${p.base}/v1/webhooks/github`, { method: "POST", headers, body });
          const json = await res.json().catch(() => null);
          expectClientError(res.status, json);
        },
      ),
      { numRuns: 60 },
    );
    expect(await counts()).toEqual(before);
  });

  it("correctly signed but malformed payloads are 400 with a message, and write nothing", async () => {
    const before = await counts();
    await fc.assert(
      fc.asyncProperty(
        fc.record(
          {
            ref: fc.anything(),
            after: fc.oneof(fc.string(), fc.constant("z".repeat(40))),
            repository: fc.constant({ full_name: t.repoName }),
            sender: fc.anything(),
          },
          { requiredKeys: ["repository"] },
        ),
        async (payload) => {
          const body = JSON.stringify(payload);
          const res = await fetch(`${p.base}/v1/webhooks/github`, {
            method: "POST",
            headers: {
              "content-type": "application/json",
              "x-github-event": "push",
              "x-github-delivery": `fzs-${Math.random()}`,
              "x-hub-signature-256": await sign(t.secret, body),
            },
            body,
          });
          expectClientError(res.status, await res.json());
        },
      ),
      { numRuns: 40 },
    );
    expect(await counts()).toEqual(before);
  });
});
