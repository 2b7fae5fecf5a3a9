// The binary form of a chunk batch (Content-Type application/vnd.kiln.log-chunks):
//   4 bytes: header length H (unsigned, big-endian) | H bytes: UTF-8 JSON header | payload
// The header lists the chunks (agentProtocol.logAppendHeader); the payload is their bytes back to
// back, in header order. Megabytes of output travel as bytes, not as base64 inside JSON.
export const LOG_CHUNKS_CONTENT_TYPE = "application/vnd.kiln.log-chunks";

const MAX_HEADER_BYTES = 256 * 1024;
const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder("utf-8", { fatal: true });

export function encodeLogFrame(header: unknown, payloads: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const head = utf8.encode(JSON.stringify(header));
  let size = 4 + head.length;
  for (const p of payloads) size += p.length;
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  let at = 4 + head.length;
  for (const p of payloads) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/** The header (unvalidated JSON) and the payload, or null when the frame is malformed. */
export function decodeLogFrame(frame: Uint8Array): { header: unknown; payload: Uint8Array } | null {
  if (frame.length < 4) return null;
  const headLength = new DataView(frame.buffer, frame.byteOffset, frame.byteLength).getUint32(0);
  if (headLength > MAX_HEADER_BYTES || 4 + headLength > frame.length) return null;
  try {
    const header: unknown = JSON.parse(fromUtf8.decode(frame.subarray(4, 4 + headLength)));
    return { header, payload: frame.subarray(4 + headLength) };
  } catch {
    return null;
  }
}
