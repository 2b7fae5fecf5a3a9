// Windowing for the log viewer: only the rows in view (plus a margin) are in the DOM. Browsers cap
// an element's height (Chrome ~33.5M px, Firefox ~17.9M px), and a 50 MB log can be 2M+ rows of
// 20 px, so past MAX_SCROLL_PX the scrollbar maps proportionally onto rows instead of 1:1.

export const MAX_SCROLL_PX = 8_000_000;

export interface WindowInput {
  rowCount: number;
  rowHeight: number;
  scrollTop: number;
  viewportHeight: number;
  overscan: number;
}

export interface WindowResult {
  /** First and last (exclusive) rows to render. */
  start: number;
  end: number;
  /** Height of the scrollable content. */
  totalHeight: number;
  /** Where the first rendered row's top edge goes, in content pixels. */
  offsetY: number;
}

export function computeWindow(w: WindowInput): WindowResult {
  const visible = Math.ceil(w.viewportHeight / w.rowHeight) + 1;
  const natural = w.rowCount * w.rowHeight;
  if (natural <= MAX_SCROLL_PX) {
    const first = Math.max(0, Math.floor(w.scrollTop / w.rowHeight));
    const start = Math.max(0, first - w.overscan);
    const end = Math.min(w.rowCount, first + visible + w.overscan);
    return { start, end, totalHeight: natural, offsetY: start * w.rowHeight };
  }
  const maxScroll = Math.max(1, MAX_SCROLL_PX - w.viewportHeight);
  const maxFirst = Math.max(0, w.rowCount - visible + 1);
  const exact = (Math.min(Math.max(w.scrollTop, 0), maxScroll) / maxScroll) * maxFirst;
  const first = Math.floor(exact);
  const start = Math.max(0, first - w.overscan);
  const end = Math.min(w.rowCount, first + visible + w.overscan);
  // Row `first` sits at the viewport's top edge (minus the fraction already scrolled past).
  const firstTop = w.scrollTop - (exact - first) * w.rowHeight;
  return { start, end, totalHeight: MAX_SCROLL_PX, offsetY: firstTop - (first - start) * w.rowHeight };
}

/** The scrollTop that puts `row` about a third of the way down the viewport. */
export function scrollTopForRow(row: number, w: Omit<WindowInput, "scrollTop" | "overscan">): number {
  const lead = Math.floor(w.viewportHeight / 3);
  const natural = w.rowCount * w.rowHeight;
  if (natural <= MAX_SCROLL_PX) return Math.max(0, row * w.rowHeight - lead);
  const visible = Math.ceil(w.viewportHeight / w.rowHeight) + 1;
  const maxScroll = Math.max(1, MAX_SCROLL_PX - w.viewportHeight);
  const maxFirst = Math.max(1, w.rowCount - visible + 1);
  const first = Math.max(0, row - Math.floor(lead / w.rowHeight));
  return Math.min(maxScroll, (first / maxFirst) * maxScroll);
}
