// The registry client against Debian's real docker-registry in both of its auth modes: htpasswd
// (Basic) and token auth, where the registry trusts JWTs from a realm (a tiny issuer here, signing
// with a throwaway certificate the registry is configured to trust).
import { execFile } from "node:child_process";
import { createPrivateKey, sign, X509Certificate } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { startRegistry, type RegistryHandle } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildImage, pushImage } from "./image-builder.ts";
import { parseChallenge } from "./registry-auth.ts";
import { RegistryClient } from "./registry-client.ts";
import { registryEndpoint } from "./registry-config.ts";
import { writeTar } from "./tar-writer.ts";

const execFileAsync = promisify(execFile);
const USER = { username: "ci", password: "token-pass" };
let base: string;
let basic: RegistryHandle;
let tokenReg: RegistryHandle;
let issuer: http.Server;
let issuerHost: string;
const tokenRequests: { scope: string | null; authorized: boolean }[] = [];
const image = buildImage({ layers: [writeTar([{ path: "hello", type: "file", data: "hi" }])] });

const b64url = (b: Buffer | string) => Buffer.from(b).toString("base64url");

/** A Docker token issuer: Basic credentials in, a JWT for the requested scope out (x5c header). */
async function startIssuer(keyPem: string, certPem: string): Promise<http.Server> {
  const key = createPrivateKey(keyPem);
  const certDer = new X509Certificate(certPem).raw.toString("base64");
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const auth = req.headers.authorization ?? "";
    const authorized = auth === `Basic ${Buffer.from(`${USER.username}:${USER.password}`).toString("base64")}`;
    const scope = url.searchParams.get("scope");
    tokenRequests.push({ scope, authorized });
    if (!authorized) {
      res.writeHead(401).end();
      return;
    }
    const access = (scope ?? "")
      .split(" ")
      .filter(Boolean)
      .map((s) => {
        const [type, name, actions] = s.split(":");
        return { type, name, actions: (actions ?? "").split(",") };
      });
    const now = Math.floor(Date.now() / 1000);
    const header = b64url(JSON.stringify({ alg: "RS256", typ: "JWT", x5c: [certDer] }));
    const claims = b64url(
      JSON.stringify({
        iss: "kiln-test-issuer",
        sub: USER.username,
        aud: url.searchParams.get("service"),
        exp: now + 300,
        nbf: now - 30,
        iat: now,
        jti: String(tokenRequests.length),
        access,
      }),
    );
    const signature = b64url(sign("sha256", Buffer.from(`${header}.${claims}`), key));
    res
      .writeHead(200, { "content-type": "application/json" })
      .end(JSON.stringify({ token: `${header}.${claims}.${signature}`, expires_in: 300 }));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return server;
}

beforeAll(async () => {
  base = await mkdtemp(path.join(os.tmpdir(), "kiln-oci-"));
  basic = await startRegistry({ dataDir: path.join(base, "basic"), basicAuth: USER });
  const keyFile = path.join(base, "issuer.key");
  const certFile = path.join(base, "issuer.crt");
  await execFileAsync("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-keyout",
    keyFile,
    "-out",
    certFile,
    "-days",
    "1",
    "-subj",
    "/CN=kiln-test-issuer",
  ]);
  issuer = await startIssuer(await readFile(keyFile, "utf8"), await readFile(certFile, "utf8"));
  issuerHost = `127.0.0.1:${(issuer.address() as AddressInfo).port}`;
  const realm = `http://${issuerHost}/token`;
  tokenReg = await startRegistry({
    dataDir: path.join(base, "token"),
    tokenAuth: { realm, service: "kiln-registry", issuer: "kiln-test-issuer", certFile },
  });
});
afterAll(async () => {
  await basic?.stop();
  await tokenReg?.stop();
  issuer?.close();
  await rm(base, { recursive: true, force: true });
});

describe("RegistryClient against docker-registry", () => {
  it("parses Basic and Bearer challenges", () => {
    expect(
      parseChallenge('Bearer realm="https://auth.example/token",service="reg",scope="repository:a/b:pull,push"'),
    ).toEqual({
      scheme: "bearer",
      params: { realm: "https://auth.example/token", service: "reg", scope: "repository:a/b:pull,push" },
    });
    expect(parseChallenge('Basic realm="kiln"')).toEqual({ scheme: "basic", params: { realm: "kiln" } });
    expect(parseChallenge("Negotiate abc")).toBeNull();
  });

  it("htpasswd: pushes and pulls with Basic credentials; refuses anonymous and wrong passwords", async () => {
    const client = new RegistryClient(registryEndpoint({ [basic.host]: USER }, basic.host));
    await pushImage(client, "kiln/basic", "1", image);
    const m = await client.getManifest("kiln/basic", image.manifestDigest);
    expect(m.digest).toBe(image.manifestDigest);
    await expect(
      new RegistryClient(registryEndpoint({ [basic.host]: {} }, basic.host)).getManifest("kiln/basic", "1"),
    ).rejects.toMatchObject({ code: "IMAGE.UNAUTHORIZED" });
    const wrong = new RegistryClient(
      registryEndpoint({ [basic.host]: { username: "ci", password: "nope" } }, basic.host),
    );
    await expect(wrong.getManifest("kiln/basic", "1")).rejects.toMatchObject({ code: "IMAGE.UNAUTHORIZED" });
  });

  it("token auth: follows the Bearer challenge to the realm with the credentials, caches the token per scope", async () => {
    tokenRequests.length = 0;
    const client = new RegistryClient(
      registryEndpoint({ [tokenReg.host]: { ...USER, authHosts: [issuerHost] } }, tokenReg.host),
    );
    await pushImage(client, "kiln/token", "1", image);
    const top = await client.getManifest("kiln/token", "1");
    expect(top.digest).toBe(image.indexDigest);
    const blob = await client.openBlob("kiln/token", image.layerDigests[0]!);
    expect(Buffer.from(await new Response(blob.body).arrayBuffer())).toEqual(image.blobs.get(image.layerDigests[0]!));
    expect(tokenRequests.length).toBeGreaterThan(0);
    expect(tokenRequests.every((r) => r.authorized)).toBe(true);
    // One token per scope (push, pull), not one per request.
    // The registry names the actions in its challenge in no fixed order (push,pull or pull,push).
    const sorted = (scope: string | null) =>
      scope?.replace(/:([^:]+)$/, (_m, a: string) => `:${a.split(",").sort().join(",")}`);
    expect(new Set(tokenRequests.map((r) => sorted(r.scope)))).toEqual(
      new Set(["repository:kiln/token:pull,push", "repository:kiln/token:pull"]),
    );
    expect(tokenRequests.length).toBe(2);

    const anonymous = new RegistryClient(
      registryEndpoint({ [tokenReg.host]: { authHosts: [issuerHost] } }, tokenReg.host),
    );
    await expect(anonymous.getManifest("kiln/token", "1")).rejects.toMatchObject({
      code: "IMAGE.UNAUTHORIZED",
      message: expect.stringContaining("refused (401)"),
    });
  });

  it("gives up on a registry that accepts the connection and never answers", async () => {
    const silent = http.createServer(() => {
      /* never respond */
    });
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const host = `127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const client = new RegistryClient(registryEndpoint({ [host]: {} }, host), { timeoutMs: 300 });
      await expect(client.getManifest("kiln/x", "1")).rejects.toMatchObject({
        code: "IMAGE.UNREACHABLE",
        message: expect.stringContaining("no answer within 300 ms"),
      });
      await expect(client.openBlob("kiln/x", image.layerDigests[0]!)).rejects.toMatchObject({
        code: "IMAGE.UNREACHABLE",
      });
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  });

  it("refuses plain http to a non-loopback registry and bad references", async () => {
    expect(() =>
      registryEndpoint({ "registry.example.com": { endpoint: "http://registry.example.com" } }, "registry.example.com"),
    ).toThrow(/only loopback/);
    expect(registryEndpoint({ "registry.example.com": {} }, "registry.example.com").baseUrl).toBe(
      "https://registry.example.com",
    );
    expect(registryEndpoint({ "localhost:5000": {} }, "localhost:5000").baseUrl).toBe("http://localhost:5000");
  });
});
