"use client";
import { type RefObject, type UIEvent, useCallback, useEffect, useLayoutEffect, useRef, useState } from "react";
import type { LogLines } from "./log-lines.ts";
import { scrollTopForRow } from "./virtual-window.ts";

const ROW = 20;

interface ScrollGeometry {
  rowCount: number;
  rowHeight: number;
  viewportHeight: number;
}

/**
 * The scroller: its viewport height, scroll position, follow mode pinned to the newest line, the
 * one-time jump to a permalinked line, and telling the user's scrolls from ours.
 */
export function useLogScroll({
  model,
  rowCount,
  follow,
  setFollow,
  pendingJump,
  live,
}: {
  model: LogLines;
  rowCount: number;
  follow: boolean;
  setFollow: (f: boolean) => void;
  pendingJump: RefObject<number | null>;
  /** The stream is live: scrolling back to the bottom resumes following. */
  live: boolean;
}) {
  const scroller = useRef<HTMLDivElement>(null);
  const programmatic = useRef(false);
  const [scrollTop, setScrollTop] = useState(0);
  const viewport = useViewportHeight(scroller);
  const geo: ScrollGeometry = { rowCount, rowHeight: ROW, viewportHeight: viewport };
  const scrollTo = useCallback((top: number) => {
    const el = scroller.current;
    if (!el) return;
    const before = el.scrollTop;
    el.scrollTop = top;
    // Only a scroll that actually moved fires a scroll event for onScroll to recognise as ours.
    if (el.scrollTop !== before) programmatic.current = true;
    setScrollTop(el.scrollTop);
  }, []);
  // Follow: stay pinned to the newest line. A permalink: jump once its line has arrived.
  useLayoutEffect(() => {
    if (pendingJump.current !== null) {
      const row = model.rowOf(pendingJump.current);
      if (row !== -1) {
        pendingJump.current = null;
        scrollTo(scrollTopForRow(row, geo));
      }
      return;
    }
    if (follow) scrollTo(scroller.current?.scrollHeight ?? 0);
  });
  const onScroll = (e: UIEvent<HTMLDivElement>) => {
    const el = e.currentTarget;
    setScrollTop(el.scrollTop);
    if (programmatic.current) {
      programmatic.current = false;
      return;
    }
    // The user scrolled: leave follow mode unless they are at the bottom.
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < ROW * 2;
    if (!atBottom && follow) setFollow(false);
    if (atBottom && !follow && live) setFollow(true);
  };
  return { scroller, scrollTop, geo, scrollTo, onScroll };
}

function useViewportHeight(scroller: RefObject<HTMLDivElement | null>): number {
  const [viewport, setViewport] = useState(600);
  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    const ro = new ResizeObserver(() => setViewport(el.clientHeight));
    ro.observe(el);
    return () => ro.disconnect();
  }, [scroller]);
  return viewport;
}
