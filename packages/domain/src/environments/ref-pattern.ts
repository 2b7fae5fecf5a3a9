// Ref patterns of allowed-refs and provenance gates: `*` matches within one path segment, `**`
// across segments. A pattern without `refs/` names a branch or a tag (`main`, `v*`).

function toRegExp(pattern: string): RegExp {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i] ?? "";
    if (c === "*" && pattern[i + 1] === "*") {
      re += ".*";
      i++;
    } else if (c === "*") re += "[^/]*";
    else re += c.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`);
}

export function refMatches(ref: string, pattern: string): boolean {
  const full = pattern.startsWith("refs/") ? [pattern] : [`refs/heads/${pattern}`, `refs/tags/${pattern}`];
  return full.some((p) => toRegExp(p).test(ref));
}

export function refAllowed(ref: string | null, patterns: readonly string[]): boolean {
  return ref !== null && patterns.some((p) => refMatches(ref, p));
}
