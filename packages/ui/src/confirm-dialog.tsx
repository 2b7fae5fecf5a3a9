"use client";
import { type KeyboardEvent, type ReactNode, type RefObject, useEffect, useId, useRef, useState } from "react";
import { Button, type ButtonVariant } from "./button.tsx";
import { dialogKeyAction, FOCUSABLE, nextFocusIndex } from "./focus-trap.ts";

/**
 * A modal asking "are you sure?" before a destructive action. Keyboard: focus moves to the confirm
 * button on open and stays inside (Tab wraps), Esc cancels, Enter confirms, and focus returns to
 * what opened it, unless the action removed that element (the page then chooses where focus goes).
 */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  pendingLabel,
  cancelLabel = "Keep",
  pending = false,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children?: ReactNode;
  confirmLabel: string;
  pendingLabel?: string;
  cancelLabel?: string;
  pending?: boolean;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const id = useId();
  const ref = useRef<HTMLDivElement>(null);
  const confirmRef = useRef<HTMLButtonElement>(null);
  useReturnFocus(open, ref);
  useEffect(() => {
    if (open) confirmRef.current?.focus();
  }, [open]);
  if (!open) return null;
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    const focused = document.activeElement;
    const other = focused instanceof HTMLButtonElement && focused !== confirmRef.current;
    const action = dialogKeyAction(e.key, other);
    if (action === "none") return;
    e.preventDefault();
    if (action === "cancel") onCancel();
    else if (action === "confirm") {
      if (!pending) onConfirm();
    } else trapTab(ref.current, e.shiftKey);
  };
  return (
    <div className="fixed inset-0 z-50 flex items-center justify-center bg-zinc-950/40 p-4">
      <div
        ref={ref}
        role="alertdialog"
        aria-modal="true"
        aria-labelledby={`${id}-title`}
        aria-describedby={children ? `${id}-body` : undefined}
        onKeyDown={onKeyDown}
        className="w-full max-w-md rounded-lg border border-zinc-200 bg-white p-4 text-left shadow-lg dark:border-zinc-800 dark:bg-zinc-900"
      >
        <h2 id={`${id}-title`} className="text-sm font-semibold">
          {title}
        </h2>
        {children ? (
          <div id={`${id}-body`} className="mt-1 text-sm text-zinc-600 dark:text-zinc-400">
            {children}
          </div>
        ) : null}
        <div className="mt-4 flex justify-end gap-2">
          <Button size="sm" variant="ghost" onClick={onCancel}>
            {cancelLabel}
          </Button>
          <Button ref={confirmRef} size="sm" variant="danger" disabled={pending} onClick={onConfirm}>
            {pending ? (pendingLabel ?? confirmLabel) : confirmLabel}
          </Button>
        </div>
      </div>
    </div>
  );
}

function trapTab(root: HTMLElement | null, backwards: boolean) {
  if (!root) return;
  const items = Array.from(root.querySelectorAll<HTMLElement>(FOCUSABLE));
  const at = items.indexOf(document.activeElement as HTMLElement);
  items[nextFocusIndex(at, items.length, backwards)]?.focus();
}

/** Remembers what had focus when the dialog opened and gives it back when it closes. */
function useReturnFocus(open: boolean, root: RefObject<HTMLElement | null>) {
  const opener = useRef<HTMLElement | null>(null);
  useEffect(() => {
    if (!open) return;
    opener.current = document.activeElement instanceof HTMLElement ? document.activeElement : null;
    return () => {
      const back = opener.current;
      const active = document.activeElement;
      // Only when focus would otherwise be lost (on the body or in the closing dialog).
      const lost = !active || active === document.body || root.current?.contains(active);
      if (back?.isConnected && lost) back.focus();
    };
  }, [open, root]);
}

/**
 * A button that asks before it acts: opens a ConfirmDialog and runs `onConfirm` (a mutation's
 * promise) when confirmed. The dialog closes when the promise settles; a refusal is the page's to
 * show (its mutation's onError), so it is swallowed here only after the page has seen it.
 */
export function ConfirmButton({
  label,
  ariaLabel,
  triggerTitle,
  title,
  children,
  confirmLabel,
  pendingLabel,
  cancelLabel,
  onConfirm,
  variant = "danger",
  size = "sm",
  disabled,
}: {
  label: ReactNode;
  ariaLabel?: string;
  /** The trigger's tooltip (e.g. why it is disabled). */
  triggerTitle?: string;
  title: string;
  children?: ReactNode;
  confirmLabel: string;
  pendingLabel?: string;
  cancelLabel?: string;
  onConfirm: () => Promise<unknown>;
  variant?: ButtonVariant;
  size?: "sm" | "md";
  disabled?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [pending, setPending] = useState(false);
  const confirm = () => {
    setPending(true);
    onConfirm()
      .catch(() => undefined)
      .finally(() => {
        setPending(false);
        setOpen(false);
      });
  };
  return (
    <>
      <Button
        size={size}
        variant={variant}
        aria-label={ariaLabel}
        title={triggerTitle}
        disabled={disabled}
        onClick={() => setOpen(true)}
      >
        {label}
      </Button>
      <ConfirmDialog
        open={open}
        title={title}
        confirmLabel={confirmLabel}
        pendingLabel={pendingLabel}
        cancelLabel={cancelLabel}
        pending={pending}
        onConfirm={confirm}
        onCancel={() => setOpen(false)}
      >
        {children}
      </ConfirmDialog>
    </>
  );
}
