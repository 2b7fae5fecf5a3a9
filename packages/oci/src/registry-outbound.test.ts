// The outbound policy of the registry client against real local HTTP servers: a "registry" that
// redirects where it should not, names token realms on other hosts, or answers 500 with a body that
// must not reach a user-visible cause. A second server stands for whatever the redirect aims at and
// records every request, so "refused" also means "nothing was sent".
import http from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { classifyAddress, permittedClasses } from "./outbound/address-policy.ts";
import { RegistryClient } from "./registry-client.ts";
import { registryEndpoint, type RegistryConfig } from "./registry-config.ts";
import { sha256Digest } from "./digest.ts";

const MARKER = "INTERNAL-SECRET-MARKER-7f3a";
const MANIFEST = Buffer.from(
  JSON.stringify({ schemaVersion: 2, mediaType: "application/vnd.oci.image.manifest.v1+json" }),
);

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
let registryHandler: Handler = (_req, res) => res.writeHead(404).end();
const targetRequests: { url: string; authorization: string | undefined }[] = [];
let registry: http.Server;
let target: http.Server;
let reg: string; // 127.0.0.1:<port>, the configured registry
let tgt: string; // 127.0.0.1:<port>, another loopback service

async function listen(handler: Handler): Promise<http.Server> {
  const s = http.createServer(handler);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return s;
}
const hostOf = (s: http.Server) => `127.0.0.1:${(s.address() as AddressInfo).port}`;

beforeAll(async () => {
  registry = await listen((req, res) => registryHandler(req, res));
  target = await listen((req, res) => {
    targetRequests.push({ url: req.url ?? "", authorization: req.headers.authorization });
    res.writeHead(200, { "content-type": "application/vnd.oci.image.manifest.v1+json" }).end(MANIFEST);
  });
  reg = hostOf(registry);
  tgt = hostOf(target);
});
afterAll(() => {
  registry?.close();
  target?.close();
});
beforeEach(() => {
  targetRequests.length = 0;
});

const redirectTo =
  (location: string): Handler =>
  (_req, res) =>
    res.writeHead(302, { location }).end();
const client = (config: RegistryConfig = { [reg]: { username: "ci", password: "pw" } }) =>
  new RegistryClient(registryEndpoint(config, Object.keys(config)[0]!), { timeoutMs: 2_000 });

describe("registry outbound policy", () => {
  it("refuses an image reference on a registry the operator did not configure, loopback names included", () => {
    for (const host of ["registry.example.com", `localhost:${tgt.split(":")[1]}`, tgt, "docker.io"]) {
      expect(() => registryEndpoint({ [reg]: {} }, host)).toThrow(
        expect.objectContaining({ code: "IMAGE.REGISTRY_NOT_ALLOWED" }),
      );
    }
    // Inherited object keys are not configuration.
    expect(() => registryEndpoint({}, "constructor")).toThrow(
      expect.objectContaining({ code: "IMAGE.REGISTRY_NOT_ALLOWED" }),
    );
  });

  it("refuses a configured registry whose name resolves to loopback when it was not configured as loopback", async () => {
    // /etc/hosts maps "vm" to 127.0.0.1 here: a name, so only public addresses are permitted.
    const host = `vm:${reg.split(":")[1]}`;
    await expect(client({ [host]: {} }).getManifest("kiln/x", "1")).rejects.toMatchObject({
      code: "IMAGE.ADDRESS_NOT_ALLOWED",
      message: expect.stringContaining("loopback"),
    });
  });

  it("refuses redirects to another loopback port, a loopback name, the metadata endpoint, private and unconfigured hosts", async () => {
    const cases: [string, string][] = [
      [`http://${tgt}/v2/kiln/x/manifests/1`, "IMAGE.HOST_NOT_ALLOWED"],
      [`http://localhost:${tgt.split(":")[1]}/v2/kiln/x/manifests/1`, "IMAGE.HOST_NOT_ALLOWED"],
      ["http://169.254.169.254/latest/meta-data/iam/security-credentials/", "IMAGE.HOST_NOT_ALLOWED"],
      ["https://169.254.169.254/latest/meta-data/", "IMAGE.HOST_NOT_ALLOWED"],
      ["https://10.0.0.7/v2/kiln/x/manifests/1", "IMAGE.HOST_NOT_ALLOWED"],
      ["https://192.168.1.1/", "IMAGE.HOST_NOT_ALLOWED"],
      ["https://unconfigured.example/v2/kiln/x/manifests/1", "IMAGE.HOST_NOT_ALLOWED"],
      ["file:///etc/passwd", "IMAGE.HOST_NOT_ALLOWED"],
    ];
    for (const [location, code] of cases) {
      registryHandler = redirectTo(location);
      await expect(client().getManifest("kiln/x", "1"), location).rejects.toMatchObject({ code });
    }
    expect(targetRequests).toEqual([]);
  });

  it("re-checks the addresses of a configured redirect host: metadata never, a name only to public addresses", async () => {
    const port = tgt.split(":")[1];
    const cases: [string, string][] = [
      // Listed on purpose, still never reachable: nothing Kiln pulls lives on the metadata endpoint.
      ["https://169.254.169.254/latest/meta-data/", "169.254.169.254"],
      ["https://[::ffff:169.254.169.254]/latest/meta-data/", "[::ffff:a9fe:a9fe]"],
      // A listed name that resolves to loopback (DNS or /etc/hosts pointing inward).
      [`https://vm:${port}/v2/kiln/x/manifests/1`, `vm:${port}`],
    ];
    for (const [location, listed] of cases) {
      registryHandler = redirectTo(location);
      await expect(
        client({ [reg]: { redirectHosts: [listed] } }).getManifest("kiln/x", "1"),
        location,
      ).rejects.toMatchObject({ code: "IMAGE.ADDRESS_NOT_ALLOWED" });
    }
    expect(targetRequests).toEqual([]);
  });

  it("follows a redirect to a configured host, without the registry's credentials", async () => {
    registryHandler = redirectTo(`http://${tgt}/blobs/cdn-copy`);
    const m = await client({ [reg]: { username: "ci", password: "pw", redirectHosts: [tgt] } }).getManifest(
      "kiln/x",
      sha256Digest(MANIFEST),
    );
    expect(m.digest).toBe(sha256Digest(MANIFEST));
    expect(targetRequests).toEqual([{ url: "/blobs/cdn-copy", authorization: undefined }]);
  });

  it("asks a token realm only on a configured host", async () => {
    const realms = [
      `https://auth.unconfigured.example/token`,
      `http://${tgt}/token`,
      `http://localhost:${tgt.split(":")[1]}/token`,
      "https://169.254.169.254/token",
    ];
    for (const realm of realms) {
      registryHandler = (_req, res) =>
        res.writeHead(401, { "www-authenticate": `Bearer realm="${realm}",service="reg"` }).end();
      await expect(client().getManifest("kiln/x", "1"), realm).rejects.toMatchObject({
        code: "IMAGE.HOST_NOT_ALLOWED",
      });
    }
    expect(targetRequests).toEqual([]);
    // Listed as an authHost, the same realm is asked (with the credentials).
    registryHandler = (req, res) => {
      if (req.headers.authorization?.startsWith("Bearer ")) return res.writeHead(404).end();
      res.writeHead(401, { "www-authenticate": `Bearer realm="http://${tgt}/token",service="reg"` }).end();
    };
    await expect(
      client({ [reg]: { username: "ci", password: "pw", authHosts: [tgt] } }).getManifest("kiln/x", "1"),
    ).rejects.toMatchObject({ code: "IMAGE.UNAUTHORIZED" }); // the target's answer carries no token
    expect(targetRequests).toHaveLength(1);
    expect(targetRequests[0]!.authorization).toBe(`Basic ${Buffer.from("ci:pw").toString("base64")}`);
  });

  it("never copies an upstream error body into the cause", async () => {
    for (const status of [500, 502, 429, 404, 400, 401, 403]) {
      registryHandler = (_req, res) =>
        res
          .writeHead(status, { "content-type": "text/plain", "www-authenticate": 'Basic realm="x"' })
          .end(`${MARKER} db=postgres://admin:pw@10.0.0.5/prod`);
      const err = (await client()
        .getManifest("kiln/x", "1")
        .then(
          () => null,
          (e: unknown) => e,
        )) as Error & { code: string };
      expect(err, String(status)).toBeInstanceOf(Error);
      expect(err.message).not.toContain(MARKER);
      expect(err.message).not.toContain("10.0.0.5");
      if (status >= 500 || status === 429) expect(err.code).toBe("IMAGE.UNREACHABLE");
    }
    // A blob request too (another code path).
    registryHandler = (_req, res) => res.writeHead(503).end(MARKER);
    await expect(client().openBlob("kiln/x", sha256Digest(MANIFEST))).rejects.toMatchObject({
      code: "IMAGE.UNREACHABLE",
      message: expect.not.stringContaining(MARKER),
    });
  });

  it("classifies addresses, embedded IPv4 included, and permits by what configuration wrote", () => {
    expect(classifyAddress("127.0.0.1")).toBe("loopback");
    expect(classifyAddress("::1")).toBe("loopback");
    expect(classifyAddress("169.254.169.254")).toBe("metadata");
    expect(classifyAddress("fd00:ec2::254")).toBe("metadata");
    expect(classifyAddress("::ffff:169.254.169.254")).toBe("metadata");
    expect(classifyAddress("::ffff:7f00:1")).toBe("loopback");
    expect(classifyAddress("64:ff9b::a00:1")).toBe("private");
    expect(classifyAddress("169.254.1.1")).toBe("link-local");
    expect(classifyAddress("fe80::1")).toBe("link-local");
    for (const ip of ["10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.0.1", "100.64.0.1", "fc00::1", "fd12::1"])
      expect(classifyAddress(ip), ip).toBe("private");
    for (const ip of ["0.0.0.0", "::", "224.0.0.1", "255.255.255.255", "192.0.2.1"])
      expect(classifyAddress(ip), ip).toBe("reserved");
    for (const ip of ["8.8.8.8", "172.32.0.1", "2606:4700::1111"]) expect(classifyAddress(ip), ip).toBe("public");
    expect([...permittedClasses("registry.example.com")]).toEqual(["public"]);
    expect([...permittedClasses("registry.example.com", { privateNetwork: true })].sort()).toEqual([
      "private",
      "public",
    ]);
    expect(permittedClasses("127.0.0.1").has("loopback")).toBe(true);
    expect(permittedClasses("localhost").has("loopback")).toBe(true);
    expect(permittedClasses("169.254.169.254").has("metadata")).toBe(false);
  });
});
