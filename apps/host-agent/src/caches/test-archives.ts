// Builds real cache archives for tests, honest or hostile: raw ustar members (any name, type, mode,
// link target), a manifest that agrees with them (so a refusal comes from the extraction rules, not
// from a digest mismatch), gzip, and the archive's size and SHA-256 as an entry would record them.
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { MANIFEST_NAME, type CacheManifestEntry } from "@kiln/domain";
import { header } from "./tar-writer.ts";

export interface RawMember {
  name: string;
  /** ustar typeflag: "0" file, "1" hardlink, "2" symlink, "3" char device, "5" dir, "6" fifo. */
  type: string;
  mode?: number;
  data?: Buffer;
  linkname?: string;
}

const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
export const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");

export function rawTar(members: RawMember[], end = true): Buffer {
  const parts: Buffer[] = [];
  for (const m of members) {
    const data = m.data ?? Buffer.alloc(0);
    parts.push(header(m.name, m.type, m.mode ?? (m.type === "5" ? 0o755 : 0o644), data.length, m.linkname ?? ""));
    if (data.length > 0) parts.push(pad(data));
  }
  if (end) parts.push(Buffer.alloc(1024));
  return Buffer.concat(parts);
}

/** The manifest an attacker who controls the whole archive would write for these members. */
function agreeingManifest(paths: string[], members: RawMember[]): Buffer {
  const entries: CacheManifestEntry[] = members.map((m) => {
    const path = m.name.endsWith("/") ? m.name.slice(0, -1) : m.name;
    if (m.type === "5") return { type: "dir", path, mode: m.mode ?? 0o755 };
    if (m.type === "2") return { type: "symlink", path, target: m.linkname ?? "" };
    const data = m.data ?? Buffer.alloc(0);
    return { type: "file", path, mode: m.mode ?? 0o644, size: data.length, sha256: sha256(data) };
  });
  return Buffer.from(JSON.stringify({ format: 1, paths, entries }));
}

export interface BuiltArchive {
  gz: Buffer;
  sizeBytes: number;
  sha256: string;
}

export function cacheArchive(
  paths: string[],
  members: RawMember[],
  manifest: Buffer = agreeingManifest(paths, members),
): BuiltArchive {
  const tar = rawTar([{ name: MANIFEST_NAME, type: "0", mode: 0o600, data: manifest }, ...members]);
  const gz = gzipSync(tar);
  return { gz, sizeBytes: gz.length, sha256: sha256(gz) };
}

export async function* chunks(b: Buffer, size = 64 * 1024): AsyncIterable<Buffer> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}
