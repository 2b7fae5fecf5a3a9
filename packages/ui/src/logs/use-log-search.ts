import { useEffect, useRef, useState } from "react";
import { stripAnsi } from "./ansi.ts";
import type { LogLines } from "./log-lines.ts";

const SLICE_ROWS = 25_000;
export const MAX_MATCHES = 10_000;

/**
 * Rows whose visible text contains `query` (case-insensitive). The search runs in slices between
 * frames so a million-line log never blocks input, and continues over new rows as they stream in.
 */
function useLogSearch(model: LogLines, version: number, query: string): { matches: number[]; searching: boolean } {
  const [matches, setMatches] = useState<number[]>([]);
  const [searching, setSearching] = useState(false);
  const state = useRef({ query: "", upTo: 0, found: [] as number[], timer: 0 as ReturnType<typeof setTimeout> | 0 });

  useEffect(() => {
    const s = state.current;
    const q = query.toLowerCase();
    if (q !== s.query) {
      if (s.timer) clearTimeout(s.timer);
      s.timer = 0;
      s.query = q;
      s.upTo = 0;
      s.found = [];
      setMatches([]);
    }
    if (!q) return setSearching(false);
    if (s.timer || s.upTo >= model.length) return;
    const step = () => {
      const end = Math.min(model.length, s.upTo + SLICE_ROWS);
      for (let r = s.upTo; r < end && s.found.length < MAX_MATCHES; r++) {
        if (stripAnsi(model.text(r)).toLowerCase().includes(q)) s.found.push(r);
      }
      s.upTo = end;
      setMatches([...s.found]);
      if (end < model.length && s.found.length < MAX_MATCHES) {
        s.timer = setTimeout(step, 0);
      } else {
        s.timer = 0;
        setSearching(false);
      }
    };
    setSearching(true);
    s.timer = setTimeout(step, 0);
  }, [model, version, query]);

  useEffect(
    () => () => {
      if (state.current.timer) clearTimeout(state.current.timer);
    },
    [],
  );
  return { matches, searching };
}

/**
 * The viewer's search: the query, the matches, and stepping through them (wrapping at both ends);
 * `reveal` scrolls a match's row into view.
 */
export function useLogFind(model: LogLines, version: number, reveal: (row: number) => void) {
  const [query, setQuery] = useState("");
  // Index into matches of the current match; -1 until the user steps to one.
  const [active, setActive] = useState(-1);
  const { matches, searching } = useLogSearch(model, version, query);
  const goToMatch = (i: number) => {
    if (matches.length === 0) return;
    const next = (i + matches.length) % matches.length;
    setActive(next);
    reveal(matches[next]!);
  };
  const onQuery = (q: string) => {
    setQuery(q);
    setActive(-1);
  };
  return { query, onQuery, active, matches, searching, goToMatch };
}
