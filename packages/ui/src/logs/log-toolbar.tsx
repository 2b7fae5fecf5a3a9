"use client";
import { useId } from "react";
import { Button, buttonClasses } from "../button.tsx";
import { MAX_MATCHES } from "./use-log-search.ts";

function withStream(url: string, stream: "stdout" | "stderr"): string {
  return `${url}${url.includes("?") ? "&" : "?"}stream=${stream}`;
}

function matchLabel(active: number, n: number): string {
  const count = `${n}${n >= MAX_MATCHES ? "+" : ""}`;
  return active >= 0 ? `${Math.min(active + 1, n)} / ${count}` : `${count} ${n === 1 ? "match" : "matches"}`;
}

/** Search (Enter steps, Shift+Enter steps back), the match count, follow, and the raw downloads. */
export function LogToolbar({
  query,
  onQuery,
  matches,
  searching,
  active,
  goToMatch,
  follow,
  toggleFollow,
  rawUrl,
}: {
  query: string;
  onQuery: (q: string) => void;
  matches: number;
  searching: boolean;
  active: number;
  goToMatch: (i: number) => void;
  follow: boolean;
  toggleFollow: () => void;
  rawUrl: string;
}) {
  const searchId = useId();
  return (
    <div className="ml-auto flex flex-wrap items-center gap-2">
      <label className="sr-only" htmlFor={searchId}>
        Search the log
      </label>
      <input
        id={searchId}
        type="search"
        placeholder="Search log"
        value={query}
        onChange={(e) => onQuery(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter") goToMatch(active === -1 ? 0 : active + (e.shiftKey ? -1 : 1));
        }}
        className="h-7 w-48 rounded-md border border-zinc-300 bg-white px-2 text-xs focus-visible:outline-2 focus-visible:outline-blue-600 dark:border-zinc-700 dark:bg-zinc-950"
      />
      {query ? (
        <span className="text-xs tabular-nums text-zinc-500" aria-live="polite">
          {matches === 0 ? (searching ? "searching…" : "no matches") : matchLabel(active, matches)}
        </span>
      ) : null}
      <MatchStepper matches={matches} active={active} goToMatch={goToMatch} />
      <Button size="sm" aria-pressed={follow} onClick={toggleFollow} variant={follow ? "primary" : "secondary"}>
        Follow
      </Button>
      <span className="flex items-center gap-1 text-xs text-zinc-500 dark:text-zinc-400">
        Raw:
        <a href={withStream(rawUrl, "stdout")} className={buttonClasses("secondary", "sm")} download>
          stdout
        </a>
        <a href={withStream(rawUrl, "stderr")} className={buttonClasses("secondary", "sm")} download>
          stderr
        </a>
      </span>
    </div>
  );
}

function MatchStepper({
  matches,
  active,
  goToMatch,
}: {
  matches: number;
  active: number;
  goToMatch: (i: number) => void;
}) {
  return (
    <>
      <Button
        size="sm"
        variant="ghost"
        aria-label="Previous match"
        disabled={matches === 0}
        onClick={() => goToMatch(active <= 0 ? matches - 1 : active - 1)}
      >
        ↑
      </Button>
      <Button
        size="sm"
        variant="ghost"
        aria-label="Next match"
        disabled={matches === 0}
        onClick={() => goToMatch(active + 1)}
      >
        ↓
      </Button>
    </>
  );
}
