/**
 * The `rel="next"` URL of an RFC 8288 Link header, as GitHub sends for cursor pagination
 * (`<https://api.github.com/...&cursor=v1_123>; rel="next"`). Null when there is no next page.
 */
export function nextLink(header: string | null): string | null {
  if (!header) return null;
  for (const part of header.split(",")) {
    const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (!m?.[1] || !m[2]) continue;
    const rels = /\brel="?([^";]*)"?/.exec(m[2])?.[1]?.split(/\s+/) ?? [];
    if (rels.includes("next")) return m[1];
  }
  return null;
}
