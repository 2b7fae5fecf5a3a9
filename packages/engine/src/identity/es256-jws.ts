// Compact JWS with ES256 (RFC 7515, RFC 7518 3.4): the signature is the raw 64-byte r || s
// ("IEEE P1363"), never DER. Node's crypto does the curve arithmetic; this file only frames it.
// The verifier is the one the platform's own relying parties use (verifyIdToken); it passes
// Wycheproof's ecdsa_secp256r1_sha256_p1363 vectors (es256-jws.test.ts).
import { createPublicKey, sign, verify, type KeyObject, type JsonWebKey } from "node:crypto";

interface JwsHeader {
  alg: string;
  kid?: string;
  typ?: string;
}

export function signEs256(privateKey: KeyObject, header: { kid: string }, payload: object): string {
  const h = Buffer.from(JSON.stringify({ alg: "ES256", typ: "JWT", kid: header.kid })).toString("base64url");
  const p = Buffer.from(JSON.stringify(payload)).toString("base64url");
  const sig = sign("sha256", Buffer.from(`${h}.${p}`), { key: privateKey, dsaEncoding: "ieee-p1363" });
  return `${h}.${p}.${sig.toString("base64url")}`;
}

/** Raw ECDSA P-256/SHA-256 check of a P1363 signature: false for any malformed input. */
export function verifyP256Sha256(publicKey: KeyObject, message: Buffer, signature: Buffer): boolean {
  // P1363 for P-256 is exactly 64 bytes; Node would also reject others, but say it here.
  if (signature.length !== 64) return false;
  try {
    return verify("sha256", message, { key: publicKey, dsaEncoding: "ieee-p1363" }, signature);
  } catch {
    return false;
  }
}

export function publicKeyFromJwk(jwk: JsonWebKey): KeyObject {
  if (jwk.kty !== "EC" || jwk.crv !== "P-256") throw new Error("not a P-256 key");
  return createPublicKey({ key: { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y }, format: "jwk" });
}

export type DecodedJws =
  | { ok: true; header: JwsHeader; payload: Record<string, unknown>; signingInput: Buffer; signature: Buffer }
  | { ok: false };

const B64URL = /^[A-Za-z0-9_-]*$/;

/** Splits and parses a compact JWS; no trust in anything yet. */
export function decodeJws(token: string): DecodedJws {
  if (token.length > 8192) return { ok: false };
  const parts = token.split(".");
  if (parts.length !== 3) return { ok: false };
  const [h, p, s] = parts as [string, string, string];
  if (!B64URL.test(h) || !B64URL.test(p) || !B64URL.test(s) || h === "" || p === "") return { ok: false };
  try {
    const header = JSON.parse(Buffer.from(h, "base64url").toString("utf8")) as unknown;
    const payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8")) as unknown;
    if (!isRecord(header) || !isRecord(payload) || typeof header.alg !== "string") return { ok: false };
    if (header.kid !== undefined && typeof header.kid !== "string") return { ok: false };
    return {
      ok: true,
      header: header as unknown as JwsHeader,
      payload,
      signingInput: Buffer.from(`${h}.${p}`),
      signature: Buffer.from(s, "base64url"),
    };
  } catch {
    return { ok: false };
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
