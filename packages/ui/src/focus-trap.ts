/**
 * Pure keyboard rules of a modal: where Tab goes from the focused element, and what a key does.
 * Kept apart from the component so they are tested without a browser.
 */

/** The index to focus after Tab (or Shift+Tab) from `current` among `count` focusable elements. */
export function nextFocusIndex(current: number, count: number, backwards: boolean): number {
  if (count <= 0) return -1;
  if (current < 0) return backwards ? count - 1 : 0;
  return backwards ? (current - 1 + count) % count : (current + 1) % count;
}

export type DialogKeyAction = "cancel" | "confirm" | "trap" | "none";

/**
 * Esc cancels; Enter confirms unless focus is on another button (Enter there presses that button,
 * "Keep" must keep); Tab is trapped inside the dialog.
 */
export function dialogKeyAction(key: string, focusedIsOtherButton: boolean): DialogKeyAction {
  if (key === "Escape") return "cancel";
  if (key === "Tab") return "trap";
  if (key === "Enter" && !focusedIsOtherButton) return "confirm";
  return "none";
}

export const FOCUSABLE =
  'button:not([disabled]), [href], input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';
