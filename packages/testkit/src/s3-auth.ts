// Credentials of one embedded S3 store, and the check that it accepts only those (issue 15).
// s3rver ships a public key pair (S3RVER/S3RVER) and does not verify SigV4 signatures at all, so
// anything that reached its port could read every tenant's objects. Each store gets a random key
// pair, created with its data dir and kept there (0600) so a restart serves the same clients, and
// every request must carry a valid SigV4 signature (header or presigned query) made with it.
import { createHash, createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import type { IncomingMessage } from "node:http";
import path from "node:path";
import type S3rver from "s3rver";
import S3Error from "s3rver/lib/models/error.js";
import AWSAccount from "s3rver/lib/models/account.js";

export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

export const S3_CREDENTIALS_FILE = ".kiln-s3-credentials.json";

/** The store's key pair: read from `<dataDir>/.kiln-s3-credentials.json`, created there (0600) on first use. */
export async function loadOrCreateS3Credentials(dataDir: string): Promise<S3Credentials> {
  const file = path.join(dataDir, S3_CREDENTIALS_FILE);
  if (existsSync(file)) {
    await chmod(file, 0o600);
    const parsed = JSON.parse(await readFile(file, "utf8")) as Partial<S3Credentials>;
    if (typeof parsed.accessKeyId === "string" && typeof parsed.secretAccessKey === "string") {
      return { accessKeyId: parsed.accessKeyId, secretAccessKey: parsed.secretAccessKey };
    }
    throw new Error(`${file} does not hold an accessKeyId and a secretAccessKey; delete it to get a new pair`);
  }
  await mkdir(dataDir, { recursive: true });
  const creds: S3Credentials = {
    // AWS's shape (20 upper-case characters, 40 for the secret), so SDKs and tools take them as is.
    accessKeyId: `KILN${randomBytes(8).toString("hex").toUpperCase()}`,
    secretAccessKey: randomBytes(30).toString("base64url"),
  };
  await writeFile(file, JSON.stringify(creds), { mode: 0o600, flag: "wx" });
  return creds;
}

type KoaCtx = { req: IncomingMessage; method: string };
type KoaLike = { middleware: ((ctx: KoaCtx, next: () => Promise<void>) => Promise<void>)[] };

/**
 * Puts the signature check in front of s3rver's own middleware: anonymous requests, SigV2, other
 * key ids (the public S3RVER pair included) and wrong signatures are refused with S3's 403 codes.
 * Returns a function that forgets the key pair again (s3rver's account registry is process-wide).
 */
export function requireS3Credentials(server: S3rver, creds: S3Credentials): () => void {
  // s3rver looks the key id up in its own registry after this check; without an account it would
  // answer InvalidAccessKeyId to the right key.
  const account = new AWSAccount(123456789012, "kiln");
  account.createKeyPair(creds.accessKeyId, creds.secretAccessKey);
  (server as unknown as KoaLike).middleware.unshift(async (ctx, next) => {
    // CORS preflights carry no credentials by design; s3rver answers them from the bucket's CORS config.
    if (ctx.method !== "OPTIONS") verifySigV4(ctx.req, creds, Date.now());
    return next();
  });
  return () => account.revokeAccessKey(creds.accessKeyId);
}

interface SignedRequest {
  accessKeyId: string;
  scope: string[];
  amzDate: string;
  signedHeaders: string[];
  signature: string;
  payloadHash: string;
  query: [string, string][];
}

function denied(code: string, message: string): never {
  throw new S3Error(code, message);
}

/** Throws an S3Error unless `req` is signed (AWS4-HMAC-SHA256) with `creds`. */
function verifySigV4(req: IncomingMessage, creds: S3Credentials, now: number): void {
  const [rawPath = "/", rawQuery = ""] = (req.url ?? "/").split("?", 2);
  const query = parseQuery(rawQuery);
  const signed = readSignature(req, query);
  if (signed.accessKeyId !== creds.accessKeyId) {
    denied("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.");
  }
  const [date, region, service, terminator] = signed.scope;
  if (!date || !region || !service || terminator !== "aws4_request" || !signed.amzDate.startsWith(date)) {
    denied("AuthorizationHeaderMalformed", "The credential scope is malformed.");
  }
  const canonicalRequest = [
    req.method ?? "GET",
    rawPath,
    signed.query
      .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
      .sort(([ak, av], [bk, bv]) => (ak < bk ? -1 : ak > bk ? 1 : av < bv ? -1 : av > bv ? 1 : 0))
      .map(([k, v]) => `${k}=${v}`)
      .join("&"),
    ...signed.signedHeaders.map((h) => `${h}:${headerValue(req, h)}`),
    "",
    signed.signedHeaders.join(";"),
    signed.payloadHash,
  ].join("\n");
  const stringToSign = [
    "AWS4-HMAC-SHA256",
    signed.amzDate,
    signed.scope.join("/"),
    createHash("sha256").update(canonicalRequest).digest("hex"),
  ].join("\n");
  let key = hmac(`AWS4${creds.secretAccessKey}`, date);
  for (const part of [region, service, "aws4_request"]) key = hmac(key, part);
  const expected = createHmac("sha256", key).update(stringToSign).digest();
  const given = Buffer.from(signed.signature, "hex");
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    denied(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
    );
  }
  const expires = query.find(([k]) => k === "X-Amz-Expires")?.[1];
  // Written as "not before the deadline" so that a malformed date or expiry (NaN) is refused too.
  if (expires !== undefined && !(parseAmzDate(signed.amzDate) + Number(expires) * 1000 >= now)) {
    denied("AccessDenied", "Request has expired");
  }
}

function readSignature(req: IncomingMessage, query: [string, string][]): SignedRequest {
  const q = (name: string) => query.find(([k]) => k === name)?.[1];
  const auth = req.headers.authorization;
  if (auth !== undefined) {
    const m = /^AWS4-HMAC-SHA256 Credential=([^,\s]+),\s*SignedHeaders=([^,\s]+),\s*Signature=([0-9a-f]{64})$/.exec(
      auth.trim(),
    );
    if (!m?.[1] || !m[2] || !m[3]) denied("AccessDenied", "Only AWS4-HMAC-SHA256 signatures are accepted.");
    const [accessKeyId = "", ...scope] = m[1].split("/");
    const amzDate = headerValue(req, "x-amz-date");
    if (!amzDate) denied("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header");
    return {
      accessKeyId,
      scope,
      amzDate,
      signedHeaders: m[2].split(";"),
      signature: m[3],
      payloadHash: headerValue(req, "x-amz-content-sha256") || "UNSIGNED-PAYLOAD",
      query,
    };
  }
  const credential = q("X-Amz-Credential");
  const signature = q("X-Amz-Signature");
  const amzDate = q("X-Amz-Date");
  const signedHeaders = q("X-Amz-SignedHeaders");
  if (q("X-Amz-Algorithm") !== "AWS4-HMAC-SHA256" || !credential || !signature || !amzDate || !signedHeaders) {
    denied("AccessDenied", "Access Denied");
  }
  if (!/^[0-9a-f]{64}$/.test(signature)) denied("SignatureDoesNotMatch", "The signature is malformed.");
  const [accessKeyId = "", ...scope] = credential.split("/");
  return {
    accessKeyId,
    scope,
    amzDate,
    signedHeaders: signedHeaders.split(";"),
    signature,
    payloadHash: q("X-Amz-Content-Sha256") ?? "UNSIGNED-PAYLOAD",
    query: query.filter(([k]) => k !== "X-Amz-Signature"),
  };
}

function parseQuery(raw: string): [string, string][] {
  if (raw === "") return [];
  return raw.split("&").map((pair) => {
    const i = pair.indexOf("=");
    const k = i < 0 ? pair : pair.slice(0, i);
    const v = i < 0 ? "" : pair.slice(i + 1);
    return [safeDecode(k), safeDecode(v)];
  });
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return denied("InvalidArgument", "The query string is not valid percent-encoding.");
  }
}

/** SigV4's encoding: RFC 3986 unreserved characters as they are, everything else %XX (upper case). */
function uriEncode(s: string): string {
  return encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

function headerValue(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  const joined = Array.isArray(v) ? v.join(",") : (v ?? "");
  return joined.trim().replace(/\s+/g, " ");
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac("sha256", key).update(data).digest();
}

/** 20240101T000000Z -> epoch ms (NaN when malformed). */
function parseAmzDate(s: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s);
  if (!m) return Number.NaN;
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]));
}
