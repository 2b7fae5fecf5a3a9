import type { ReactNode } from "react";
import { hasControls, isDefaultStyle, parseAnsi, type AnsiStyle } from "./ansi.ts";
import { styleCss } from "./ansi-colors.ts";

/** Wraps case-insensitive occurrences of `q` in <mark>; text stays text (React escapes it). */
function highlight(text: string, q: string, key: string): ReactNode {
  if (!q) return text;
  const lower = text.toLowerCase();
  const out: ReactNode[] = [];
  let from = 0;
  let at = lower.indexOf(q, from);
  if (at === -1) return text;
  while (at !== -1) {
    if (at > from) out.push(text.slice(from, at));
    out.push(
      <mark key={`${key}-${at}`} className="rounded-sm bg-yellow-200 text-inherit dark:bg-yellow-700/70">
        {text.slice(at, at + q.length)}
      </mark>,
    );
    from = at + q.length;
    at = lower.indexOf(q, from);
  }
  if (from < text.length) out.push(text.slice(from));
  return out;
}

/** One log line's content: plain text fast path, styled spans when it has escapes or inherits a style. */
export function LineContent({ text, start, query }: { text: string; start: AnsiStyle; query: string }): ReactNode {
  if (!hasControls(text) && isDefaultStyle(start)) return highlight(text, query, "p");
  return parseAnsi(text, start).spans.map((s, i) => (
    <span key={i} style={styleCss(s.style)}>
      {highlight(s.text, query, String(i))}
    </span>
  ));
}
