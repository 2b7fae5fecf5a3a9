// Byte transfers to and from presigned object-store URLs. Plain node:http(s) rather than fetch:
// S3 needs an exact Content-Length on part uploads (no chunked bodies), and streaming a file range
// with a running SHA-256 keeps memory flat for 20 GB artifacts.
import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import http from "node:http";
import https from "node:https";
import { Readable, Transform } from "node:stream";
import { pipeline } from "node:stream/promises";

const agentHttp = new http.Agent({ keepAlive: true, maxSockets: 16 });
const agentHttps = new https.Agent({ keepAlive: true, maxSockets: 16 });

export class HttpStatusError extends Error {
  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`object store answered ${status}: ${body.slice(0, 300)}`);
    this.name = "HttpStatusError";
  }
}

function request(
  url: string,
  init: { method: string; headers?: Record<string, string | number>; signal?: AbortSignal },
): { req: http.ClientRequest; res: Promise<http.IncomingMessage> } {
  const u = new URL(url);
  const mod = u.protocol === "https:" ? https : http;
  const req = mod.request(u, {
    method: init.method,
    headers: init.headers,
    agent: u.protocol === "https:" ? agentHttps : agentHttp,
    ...(init.signal ? { signal: init.signal } : {}),
  });
  const res = new Promise<http.IncomingMessage>((resolve, reject) => {
    req.once("response", resolve);
    req.once("error", reject);
  });
  return { req, res };
}

async function readAll(res: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

function hashing(
  hash: ReturnType<typeof createHash>,
  count: { n: number },
  also?: ReturnType<typeof createHash>,
): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      also?.update(chunk);
      count.n += chunk.length;
      cb(null, chunk);
    },
  });
}

/**
 * PUTs bytes [offset, offset+size) of `file` to a presigned part URL, hashing exactly the bytes
 * sent. Resolves with the part's ETag, SHA-256 and MD5 (the MD5 lets the control plane check the
 * store's multipart ETag instead of reading the object back; docs/adr/0007-artifacts.md).
 */
export async function putFileRange(
  url: string,
  file: string,
  offset: number,
  size: number,
  signal?: AbortSignal,
): Promise<{ etag: string; sha256: string; md5: string }> {
  const hash = createHash("sha256");
  const md5 = createHash("md5");
  const count = { n: 0 };
  const { req, res } = request(url, {
    method: "PUT",
    headers: { "content-length": size, "content-type": "application/octet-stream" },
    ...(signal ? { signal } : {}),
  });
  const body =
    size === 0 ? null : createReadStream(file, { start: offset, end: offset + size - 1, highWaterMark: 1024 * 1024 });
  const sent = body ? pipeline(body, hashing(hash, count, md5), req) : new Promise<void>((resolve) => req.end(resolve));
  const [response] = await Promise.all([res, sent]);
  const text = await readAll(response);
  if (response.statusCode !== 200) throw new HttpStatusError(response.statusCode ?? 0, text);
  if (count.n !== size) throw new Error(`sent ${count.n} bytes for a ${size}-byte part`);
  const etag = response.headers.etag;
  if (!etag) throw new Error("object store returned no ETag for the part");
  return { etag, sha256: hash.digest("hex"), md5: md5.digest("hex") };
}

/**
 * PUTs one part of a sealed upload (docs/adr/0037 "Artifacts"): reads the part's plaintext range
 * from the spool and seals it on the way out (`seal` is a PartSealStream), so no sealed copy is
 * written to disk. The hashes are of the sealed bytes sent: those are what the store holds and what
 * its multipart ETag is computed from.
 */
export async function putSealedRange(
  url: string,
  file: string,
  part: { plainOffset: number; plainSize: number; sealedSize: number },
  seal: Transform,
  signal?: AbortSignal,
): Promise<{ etag: string; sha256: string; md5: string }> {
  const hash = createHash("sha256");
  const md5 = createHash("md5");
  const count = { n: 0 };
  const { req, res } = request(url, {
    method: "PUT",
    headers: { "content-length": part.sealedSize, "content-type": "application/octet-stream" },
    ...(signal ? { signal } : {}),
  });
  const plain =
    part.plainSize === 0
      ? Readable.from([])
      : createReadStream(file, {
          start: part.plainOffset,
          end: part.plainOffset + part.plainSize - 1,
          highWaterMark: 1024 * 1024,
        });
  const [response] = await Promise.all([res, pipeline(plain, seal, hashing(hash, count, md5), req)]);
  const text = await readAll(response);
  if (response.statusCode !== 200) throw new HttpStatusError(response.statusCode ?? 0, text);
  if (count.n !== part.sealedSize) throw new Error(`sent ${count.n} bytes for a ${part.sealedSize}-byte sealed part`);
  const etag = response.headers.etag;
  if (!etag) throw new Error("object store returned no ETag for the part");
  return { etag, sha256: hash.digest("hex"), md5: md5.digest("hex") };
}

/**
 * GETs a presigned URL into `dest` (created exclusively), hashing while writing, in one stream.
 * One stream measured 0.96 of a plain SDK GetObject into a file, 4 ranged GETs of 16 MiB in
 * flight 0.61 (bench/artifacts/get-variants.ts, embedded store). Stores that cap throughput per
 * connection (S3) would want parallel ranges back, as a per-store setting.
 */
export async function downloadToFile(
  url: string,
  dest: string,
  signal?: AbortSignal,
  maxBytes = Number.MAX_SAFE_INTEGER,
  /** A sealed object (ADR 0037): opened on the way to disk; size and hash are then the plaintext's. */
  open?: Transform,
): Promise<{ sizeBytes: number; sha256: string }> {
  const hash = createHash("sha256");
  const count = { n: 0 };
  const { req, res } = request(url, { method: "GET", ...(signal ? { signal } : {}) });
  req.end();
  const response = await res;
  if (response.statusCode !== 200) throw new HttpStatusError(response.statusCode ?? 0, await readAll(response));
  // An object larger than the caller expects never fills the disk: stop at the first byte past it.
  if (Number(response.headers["content-length"] ?? 0) > maxBytes) {
    response.destroy();
    throw new TooLargeError(maxBytes);
  }
  const limit = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      cb(count.n > maxBytes ? new TooLargeError(maxBytes) : null, chunk);
    },
  });
  const file = createWriteStream(dest, { flags: "wx", mode: 0o600 });
  if (!open) {
    await pipeline(response, hashing(hash, count), limit, file);
    return { sizeBytes: count.n, sha256: hash.digest("hex") };
  }
  const plain = { n: 0 };
  await pipeline(response, hashing(createHash("sha256"), count), limit, open, hashing(hash, plain), file);
  return { sizeBytes: plain.n, sha256: hash.digest("hex") };
}

export class TooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`the object is larger than the expected ${maxBytes} bytes`);
    this.name = "TooLargeError";
  }
}

/** SHA-256 and size of a whole file. */
export async function hashFile(file: string): Promise<{ sizeBytes: number; sha256: string }> {
  const hash = createHash("sha256");
  let sizeBytes = 0;
  for await (const chunk of createReadStream(file, { highWaterMark: 1024 * 1024 })) {
    hash.update(chunk as Buffer);
    sizeBytes += (chunk as Buffer).length;
  }
  return { sizeBytes, sha256: hash.digest("hex") };
}
