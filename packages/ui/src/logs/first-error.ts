// The region of a failed job's log that the run page shows first (issue 20): the lines around the
// first line that looks like an error, or the last lines when none does. Pure, so it is tested on
// its own and runs on the same numbered lines as the log viewer (LogLines), whose #L<n> permalinks
// the excerpt links to.
import { stripAnsi } from "./ansi.ts";

/**
 * Common first-error shapes across toolchains: compiler and linker errors, test runners, shells,
 * package managers, Python/Java/Go/Rust crashes. A word match ("error", not "errors" or "0 errors").
 */
const ERROR_PATTERNS: readonly RegExp[] = [
  /\berror\b(?!s)/i,
  /\b(?:FAIL|FAILED|FAILURE)\b/,
  /\bfatal\b/i,
  /\bpanic(?:ked)?\b/,
  /\bexception\b/i,
  /^Traceback \(most recent call last\)/,
  /\bnpm ERR!/,
  /\bcommand not found\b/,
  /\bNo such file or directory\b/,
  /\bsegmentation fault\b/i,
  /\bassert(?:ion)?\s*(?:error|failed)\b/i,
];

/** "0 errors", "no errors found", "error_count=0": words that mention errors without being one. */
const NOT_AN_ERROR = /\b(?:0|no|zero)\s+(?:errors?|failures?|failed)\b/i;

export interface ErrorRegion {
  /** 1-based line numbers, inclusive: what the log viewer's #L<n> permalinks address. */
  from: number;
  to: number;
  /** The first line matching an error pattern, or null when the region is the log's tail. */
  match: number | null;
}

export function isErrorLine(text: string): boolean {
  const plain = stripAnsi(text);
  return !NOT_AN_ERROR.test(plain) && ERROR_PATTERNS.some((p) => p.test(plain));
}

/**
 * `lines[i]` is line i + 1. The first error line with `before` lines above and `after` below, or
 * the last `tail` lines; null for an empty log.
 */
export function firstErrorRegion(
  lines: readonly string[],
  opts: { before?: number; after?: number; tail?: number } = {},
): ErrorRegion | null {
  if (lines.length === 0) return null;
  const before = opts.before ?? 5;
  const after = opts.after ?? 10;
  const tail = opts.tail ?? 30;
  const index = lines.findIndex(isErrorLine);
  if (index === -1) return { from: Math.max(1, lines.length - tail + 1), to: lines.length, match: null };
  return { from: Math.max(1, index + 1 - before), to: Math.min(lines.length, index + 1 + after), match: index + 1 };
}
