// A small client for the OCI distribution API v2: manifests and blobs, pull and push. Every byte
// it returns as "the manifest <digest>" has been hashed and compared; blob bodies are handed out as
// streams and the caller verifies them (they may be large).
import { sha256Digest, verifyBytes } from "./digest.ts";
import { ImageError } from "./errors.ts";
import { MANIFEST_ACCEPT } from "./media-types.ts";
import { basicHeader, parseChallenge, TokenCache, type Credentials } from "./registry-auth.ts";
import type { RegistryEndpoint } from "./registry-config.ts";
import { registryFetch, type RegistryFetch } from "./registry-fetch.ts";

/** A manifest bigger than this is not an image manifest (the distribution registry caps at 4 MiB). */
const MAX_MANIFEST_BYTES = 4 * 1024 * 1024;

export interface FetchedManifest {
  /** The exact bytes received; `digest` is their sha256. */
  bytes: Buffer;
  digest: string;
  mediaType: string;
}

interface RequestOpts {
  scope: string;
  method?: string;
  headers?: Record<string, string>;
  body?: Uint8Array;
  signal?: AbortSignal;
  /**
   * Streaming bodies (blobs): the time limit covers only the wait for the response headers; the
   * reader enforces its own idle limit. Otherwise it covers the whole exchange.
   */
  streaming?: boolean;
}

export class RegistryClient {
  private readonly tokens = new TokenCache();
  private useBasic = false;
  private readonly fetchImpl: RegistryFetch;
  private readonly timeoutMs: number;

  constructor(
    readonly endpoint: RegistryEndpoint,
    opts: { timeoutMs?: number } = {},
  ) {
    this.fetchImpl = registryFetch(endpoint.hosts, `registry ${endpoint.registry}`);
    this.timeoutMs = opts.timeoutMs ?? 30_000;
  }

  /** GET a manifest by tag or digest. By digest, the bytes must hash to it (DIGEST_MISMATCH). */
  async getManifest(repository: string, reference: string, signal?: AbortSignal): Promise<FetchedManifest> {
    const res = await this.request(`/v2/${repository}/manifests/${reference}`, {
      scope: pull(repository),
      headers: { accept: MANIFEST_ACCEPT },
      ...(signal ? { signal } : {}),
    });
    if (res.status === 404)
      throw new ImageError("IMAGE.NOT_FOUND", `manifest ${this.name(repository, reference)} not found`);
    await this.expectOk(res, `GET manifest ${this.name(repository, reference)}`);
    const declared = Number(res.headers.get("content-length") ?? "0");
    if (declared > MAX_MANIFEST_BYTES)
      throw new ImageError("IMAGE.TOO_LARGE", `manifest ${this.name(repository, reference)} is ${declared} bytes`);
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > MAX_MANIFEST_BYTES)
      throw new ImageError("IMAGE.TOO_LARGE", `manifest ${this.name(repository, reference)} is ${bytes.length} bytes`);
    if (reference.startsWith("sha256:")) verifyBytes(bytes, reference, `manifest ${this.name(repository, reference)}`);
    const mediaType = (res.headers.get("content-type") ?? "").split(";")[0]!.trim();
    return { bytes, digest: sha256Digest(bytes), mediaType };
  }

  /** Opens a blob for reading; the caller hashes the stream. 404 is NOT_FOUND. */
  async openBlob(
    repository: string,
    digest: string,
    signal?: AbortSignal,
  ): Promise<{ body: ReadableStream<Uint8Array>; size: number | null }> {
    const res = await this.request(`/v2/${repository}/blobs/${digest}`, {
      scope: pull(repository),
      streaming: true,
      ...(signal ? { signal } : {}),
    });
    if (res.status === 404) throw new ImageError("IMAGE.NOT_FOUND", `blob ${this.name(repository, digest)} not found`);
    await this.expectOk(res, `GET blob ${this.name(repository, digest)}`);
    if (!res.body)
      throw new ImageError("IMAGE.UNREACHABLE", `GET blob ${this.name(repository, digest)}: empty response`);
    const len = res.headers.get("content-length");
    return { body: res.body, size: len === null ? null : Number(len) };
  }

  /** A small blob (an image config) read whole, within the request time limit, and verified. */
  async getSmallBlob(repository: string, digest: string, maxBytes: number, signal?: AbortSignal): Promise<Buffer> {
    const res = await this.request(`/v2/${repository}/blobs/${digest}`, {
      scope: pull(repository),
      ...(signal ? { signal } : {}),
    });
    if (res.status === 404) throw new ImageError("IMAGE.NOT_FOUND", `blob ${this.name(repository, digest)} not found`);
    await this.expectOk(res, `GET blob ${this.name(repository, digest)}`);
    if (Number(res.headers.get("content-length") ?? "0") > maxBytes)
      throw new ImageError("IMAGE.TOO_LARGE", `blob ${this.name(repository, digest)} is over ${maxBytes} bytes`);
    const bytes = Buffer.from(await res.arrayBuffer());
    if (bytes.length > maxBytes)
      throw new ImageError("IMAGE.TOO_LARGE", `blob ${this.name(repository, digest)} is over ${maxBytes} bytes`);
    verifyBytes(bytes, digest, `blob ${this.name(repository, digest)}`);
    return bytes;
  }

  async hasBlob(repository: string, digest: string): Promise<boolean> {
    const res = await this.request(`/v2/${repository}/blobs/${digest}`, { scope: pull(repository), method: "HEAD" });
    if (res.status === 404) return false;
    await this.expectOk(res, `HEAD blob ${this.name(repository, digest)}`);
    return true;
  }

  /** Monolithic upload (POST for a session, PUT with ?digest=); skipped when the blob exists. */
  async pushBlob(repository: string, bytes: Uint8Array): Promise<{ digest: string; uploaded: boolean }> {
    const digest = sha256Digest(bytes);
    if (await this.hasBlob(repository, digest)) return { digest, uploaded: false };
    const scope = push(repository);
    const start = await this.request(`/v2/${repository}/blobs/uploads/`, {
      scope,
      method: "POST",
      headers: { "content-length": "0" },
    });
    await this.expectOk(start, `start upload to ${repository}`);
    const location = start.headers.get("location");
    if (!location) throw new ImageError("IMAGE.BAD_MANIFEST", `registry gave no upload location for ${repository}`);
    const url = new URL(location, this.endpoint.baseUrl);
    url.searchParams.set("digest", digest);
    const put = await this.request(url.toString(), {
      scope,
      method: "PUT",
      body: bytes,
      headers: { "content-type": "application/octet-stream" },
    });
    await this.expectOk(put, `upload ${this.name(repository, digest)}`);
    return { digest, uploaded: true };
  }

  async putManifest(repository: string, reference: string, mediaType: string, bytes: Uint8Array): Promise<string> {
    const res = await this.request(`/v2/${repository}/manifests/${reference}`, {
      scope: push(repository),
      method: "PUT",
      body: bytes,
      headers: { "content-type": mediaType },
    });
    await this.expectOk(res, `PUT manifest ${this.name(repository, reference)}`);
    return sha256Digest(bytes);
  }

  private name(repository: string, reference: string): string {
    return `${this.endpoint.registry}/${repository}${reference.startsWith("sha256:") ? "@" : ":"}${reference}`;
  }

  // The status only: an upstream error body is whatever the far side chose to say (an internal
  // page, another service's answer after a redirect), and the message becomes a user-visible cause.
  private async expectOk(res: Response, what: string): Promise<void> {
    if (res.ok) return;
    await res.body?.cancel().catch(() => undefined);
    if (res.status === 401 || res.status === 403)
      throw new ImageError("IMAGE.UNAUTHORIZED", `${what}: registry answered ${res.status}`);
    if (res.status >= 500 || res.status === 429)
      throw new ImageError("IMAGE.UNREACHABLE", `${what}: registry answered ${res.status}`);
    throw new ImageError("IMAGE.BAD_MANIFEST", `${what}: registry answered ${res.status}`);
  }

  /** One request; on a 401 it answers the challenge and tries once more. */
  private async request(pathOrUrl: string, opts: RequestOpts): Promise<Response> {
    const url = pathOrUrl.startsWith("/") ? `${this.endpoint.baseUrl}${pathOrUrl}` : pathOrUrl;
    const creds = this.endpoint.credentials;
    const send = async (authorization: string | null): Promise<Response> => {
      const headers: Record<string, string> = { ...opts.headers };
      if (authorization) headers.authorization = authorization;
      // A registry that accepts the connection and then says nothing must not hold an attempt forever.
      const limit = new AbortController();
      const timer = setTimeout(() => limit.abort(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
      timer.unref();
      const signal = opts.signal ? AbortSignal.any([opts.signal, limit.signal]) : limit.signal;
      try {
        const res = await this.fetchImpl(url, {
          method: opts.method ?? "GET",
          headers,
          ...(opts.body ? { body: opts.body as Uint8Array<ArrayBuffer> } : {}),
          signal,
        });
        if (opts.streaming) clearTimeout(timer);
        return res;
      } catch (err) {
        clearTimeout(timer);
        if (opts.signal?.aborted || err instanceof ImageError) throw err;
        throw new ImageError(
          "IMAGE.UNREACHABLE",
          `registry ${this.endpoint.registry} unreachable: ${limit.signal.aborted ? `no answer within ${this.timeoutMs} ms` : causeOf(err)}`,
        );
      }
    };
    const first = await send(this.cachedAuth(opts.scope, creds));
    if (first.status !== 401) return first;
    const challenge = parseChallenge(first.headers.get("www-authenticate"));
    await first.body?.cancel();
    if (!challenge)
      throw new ImageError(
        "IMAGE.UNAUTHORIZED",
        `registry ${this.endpoint.registry} answered 401 without a usable challenge`,
      );
    let auth: string;
    if (challenge.scheme === "basic") {
      if (!creds)
        throw new ImageError(
          "IMAGE.UNAUTHORIZED",
          `registry ${this.endpoint.registry} requires credentials (configure them in KILN_REGISTRIES)`,
        );
      this.useBasic = true;
      auth = basicHeader(creds);
    } else {
      auth = `Bearer ${await this.tokens.fetch(challenge, opts.scope, creds, this.fetchImpl, this.endpoint.hosts)}`;
    }
    return send(auth);
  }

  private cachedAuth(scope: string, creds: Credentials | null): string | null {
    if (this.useBasic && creds) return basicHeader(creds);
    const token = this.tokens.get(scope);
    return token ? `Bearer ${token}` : null;
  }
}

const pull = (repository: string) => `repository:${repository}:pull`;
const push = (repository: string) => `repository:${repository}:pull,push`;

function causeOf(err: unknown): string {
  const e = err as Error & { cause?: { code?: string; message?: string } };
  return e.cause?.code ?? e.cause?.message ?? e.message;
}
