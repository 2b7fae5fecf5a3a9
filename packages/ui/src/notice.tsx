import type { ReactNode } from "react";
import { cn } from "./cn.ts";

/**
 * The outcome line under an admin action: a refusal (role=alert, read out at once) or a success
 * note (role=status, polite). The status region is always rendered, empty when there is no note,
 * because screen readers only announce changes to a live region that already exists.
 */
export function Notice({
  tone,
  children,
  className,
}: {
  tone: "error" | "success";
  children?: ReactNode;
  className?: string;
}) {
  if (tone === "error")
    return children ? (
      <p role="alert" className={cn("mt-2 text-sm text-red-700 dark:text-red-400", className)}>
        {children}
      </p>
    ) : null;
  return (
    <p role="status" className={cn("mt-2 text-sm text-emerald-700 empty:hidden dark:text-emerald-400", className)}>
      {children ?? ""}
    </p>
  );
}

/** The pair every admin card shows under its table: the last refusal, then the last success. */
export function Notices({ error, note }: { error?: string | null; note?: string | null }) {
  return (
    <>
      <Notice tone="error">{error}</Notice>
      <Notice tone="success">{note}</Notice>
    </>
  );
}
