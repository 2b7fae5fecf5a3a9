// Kept apart from the browser-safe run filters (now in @kiln/domain): the cursor is server-side only.

/**
 * The keyset cursor is the last row's (created_at, id), opaque to clients. created_at is stored with
 * millisecond precision (timestamptz(3)), so a JavaScript Date round-trips it exactly and no row is
 * skipped or repeated at a page boundary.
 */
export interface RunCursor {
  createdAt: Date;
  id: string;
}

export function encodeRunCursor(c: RunCursor): string {
  return Buffer.from(`${c.createdAt.toISOString()}|${c.id}`, "utf8").toString("base64url");
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Null for anything that is not a cursor this module made (treated as "first page" by callers). */
export function decodeRunCursor(s: string): RunCursor | null {
  const [iso, id] = Buffer.from(s, "base64url").toString("utf8").split("|");
  if (!iso || !id || !UUID.test(id)) return null;
  const createdAt = new Date(iso);
  return Number.isNaN(createdAt.getTime()) ? null : { createdAt, id };
}
