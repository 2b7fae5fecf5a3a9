// The ID token endpoint from inside a real microVM (docs/adr/0024): the guest reaches it at
// $KILN_ID_TOKEN_URL (http://10.0.2.100:3128/_kiln/id-token), the same guestfwd -> relay -> attempt
// listener path its egress takes, origin-form and absolute-form alike; a wrong or missing request
// token is refused there and never reaches the control plane. The process driver's path is
// exercised end to end by e2e/id-tokens.test.ts; the control plane here is a recorder standing in
// for the web server's id-token route (tested against real PostgreSQL elsewhere), since what this
// proves is the channel and the refusals, not the mint.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger } from "@kiln/logger";
import { ControlClient, type JobTicket } from "../../control-client.ts";
import { EgressProxy } from "../../egress/index.ts";
import { openIdTokenEndpoint } from "../../identity/index.ts";
import { runCaptured } from "../sandbox-contract-support.ts";
import { createMicrovmDriver, type MicrovmDriver } from "./microvm-driver.ts";
import { MICROVM_TEST_SIZES } from "./microvm-test-sizes.ts";

const TIMEOUT_MS = 240_000;
const ASSETS_DIR = path.join(os.tmpdir(), "kiln-microvm-assets");
const quiet = createLogger({}, () => undefined);
const calls: string[] = [];
let control: http.Server;
let workDir = "";
let driver: MicrovmDriver;
let proxy: EgressProxy;

beforeAll(async () => {
  control = http.createServer((req, res) => {
    let body = "";
    req.on("data", (b: Buffer) => (body += b.toString()));
    req.on("end", () => {
      calls.push(`${req.headers.authorization} ${body}`);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ value: `jwt-for-${JSON.parse(body).audience}`, expires_at: new Date().toISOString() }));
    });
  });
  await new Promise<void>((r) => control.listen(0, "127.0.0.1", () => r()));
  workDir = await mkdtemp(path.join(os.tmpdir(), "kiln-mvm-idt-"));
  proxy = new EgressProxy({ socketDir: path.join(workDir, ".egress"), allowInternalAddresses: false, logger: quiet });
  driver = await createMicrovmDriver({
    workDir,
    assetsDir: ASSETS_DIR,
    warmPoolSize: 0,
    sizes: MICROVM_TEST_SIZES,
    accel: "auto",
    logger: quiet,
  });
}, TIMEOUT_MS);

afterAll(async () => {
  await driver?.close();
  await driver?.removeLeftovers();
  await proxy?.close();
  control?.close();
  await rm(workDir, { recursive: true, force: true });
}, TIMEOUT_MS);

// busybox nc with the request sent by a script (see microvm-egress.test.ts: plain nc half-closes).
const PROBES = String.raw`
echo "url=$KILN_ID_TOKEN_URL"
printf '%s\n' 'printf "$REQ"; cat >&2' > /tmp/client.sh
send() { REQ="$1" timeout 30 nc 10.0.2.100 3128 -e sh /tmp/client.sh 2>&1; }
ask() { send "GET $1 HTTP/1.1\r\nHost: 10.0.2.100:3128\r\n$2Connection: close\r\n\r\n" | tr -d '\r' | sed -n '1p;$p'; }
echo "--- own"; ask "/_kiln/id-token?audience=vm.example" "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN\r\n"
echo "--- absolute"; ask "http://10.0.2.100:3128/_kiln/id-token?audience=abs.example" "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN\r\n"
echo "--- none"; ask "/_kiln/id-token?audience=x" ""
echo "--- wrong"; ask "/_kiln/id-token?audience=x" "Authorization: Bearer kirt_not_this_one\r\n"
echo "--- path"; ask "/v1/agent/claims" "Authorization: Bearer $KILN_ID_TOKEN_REQUEST_TOKEN\r\n"
echo "--- end"
`;

describe("the ID token endpoint inside a microVM", () => {
  it("answers the attempt's own request token over the guest's egress address and refuses the rest", {
    timeout: TIMEOUT_MS,
  }, async () => {
    const ticket = {
      jobId: randomUUID(),
      attemptId: randomUUID(),
      epoch: 2,
      jobToken: "kjt_vm",
      trustClass: "trusted",
    } as JobTicket;
    const client = new ControlClient(`http://127.0.0.1:${(control.address() as AddressInfo).port}`, "host-cred");
    const endpoint = openIdTokenEndpoint({ client, ticket, log: quiet });
    const listener = await proxy.open({
      attemptId: ticket.attemptId,
      trustClass: "trusted",
      listen: "unix",
      policy: { trustClass: "trusted", allowList: [] },
      onDecision: () => undefined,
      onDenied: () => undefined,
      idTokens: endpoint,
    });
    const sandbox = await driver.create({ attemptId: ticket.attemptId, image: null });
    let out = "";
    try {
      const r = await runCaptured(sandbox, PROBES, { KILN_ID_TOKEN_REQUEST_TOKEN: endpoint.requestToken });
      out = r.stdout.toString();
      expect(r.exitCode, r.stderr.toString()).toBe(0);
    } finally {
      await sandbox.destroy();
      await listener.close();
    }
    const section = (name: string) => out.split(`--- ${name}\n`)[1]?.split("--- ")[0]?.trim() ?? "";
    expect(out).toContain("url=http://10.0.2.100:3128/_kiln/id-token");
    expect(section("own")).toBe('HTTP/1.1 200 OK\n{"value":"jwt-for-vm.example"}');
    expect(section("absolute")).toBe('HTTP/1.1 200 OK\n{"value":"jwt-for-abs.example"}');
    expect(section("none")).toMatch(/^HTTP\/1\.1 401/);
    expect(section("wrong")).toMatch(/^HTTP\/1\.1 401/);
    expect(section("path")).toMatch(/^HTTP\/1\.1 404/);
    expect(calls).toEqual([
      `Bearer kjt_vm ${JSON.stringify({ epoch: 2, audience: "vm.example" })}`,
      `Bearer kjt_vm ${JSON.stringify({ epoch: 2, audience: "abs.example" })}`,
    ]);
  });
});
