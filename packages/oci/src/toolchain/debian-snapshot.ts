// Which state of Debian's archive a build installs from (docs/adr/0040): the sha256 of the suite's
// InRelease file pins the Packages indexes, and so every package version apt can choose. Its Date
// becomes SOURCE_DATE_EPOCH, so the same archive state gives the same mtimes. When the archive is
// unreachable the last state seen is reused (said so), so a cached image still serves offline.
import { createHash } from "node:crypto";
import { DEBIAN } from "./image-spec.ts";
import type { ImageCache } from "./image-cache.ts";

export interface DebianSnapshot {
  /** sha256:<hex> of dists/<suite>/InRelease. */
  release: string;
  /** The Release file's Date field, as written. */
  date: string;
  /** Date as seconds since the epoch: SOURCE_DATE_EPOCH for the build. */
  epoch: number;
}

const RECORD = "debian-snapshot";

export async function debianSnapshot(cache: ImageCache, say: (m: string) => void): Promise<DebianSnapshot> {
  const url = `${DEBIAN.mirror}/dists/${DEBIAN.suite}/InRelease`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    const text = Buffer.from(await res.arrayBuffer());
    const date = /^Date: (.+)$/m.exec(text.toString("utf8"))?.[1]?.trim();
    const epoch = date ? Math.floor(Date.parse(date) / 1000) : Number.NaN;
    if (!date || !Number.isFinite(epoch)) throw new Error("no Date field");
    const snap = { release: `sha256:${createHash("sha256").update(text).digest("hex")}`, date, epoch };
    await cache.writeRecord("names", RECORD, snap);
    return snap;
  } catch (err) {
    const last = await cache.readRecord<DebianSnapshot>("names", RECORD);
    if (!last)
      throw new Error(`cannot read ${url}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
    say(`${url} unreachable (${err instanceof Error ? err.message : String(err)}): using the archive state seen last`);
    return last;
  }
}
