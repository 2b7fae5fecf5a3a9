"use client";
import { type RefObject, useEffect, useRef, useState } from "react";

function lineFromHash(): number | null {
  const m = /^#L(\d+)$/.exec(typeof window === "undefined" ? "" : window.location.hash);
  return m ? Number(m[1]) : null;
}

/**
 * The #L123 permalink: the selected line, follow mode (off when a line is linked), and the line
 * still to scroll to once it has streamed in (`pendingJump`, consumed by useLogScroll).
 */
export function useLineHash(
  permalinks: boolean,
  live: boolean,
): {
  selected: number | null;
  follow: boolean;
  setFollow: (f: boolean | ((f: boolean) => boolean)) => void;
  pendingJump: RefObject<number | null>;
} {
  const [follow, setFollow] = useState(live && (!permalinks || lineFromHash() === null));
  const [selected, setSelected] = useState<number | null>(() => (permalinks ? lineFromHash() : null));
  const pendingJump = useRef<number | null>(selected);
  useEffect(() => {
    if (!permalinks) return;
    const onHash = () => {
      const n = lineFromHash();
      setSelected(n);
      pendingJump.current = n;
      if (n !== null) setFollow(false);
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, [permalinks]);
  return { selected, follow, setFollow, pendingJump };
}
