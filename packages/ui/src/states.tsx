import type { ReactNode } from "react";
import { Button } from "./button.tsx";
import { cn } from "./cn.ts";

export function EmptyState({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="rounded-lg border border-dashed border-zinc-300 px-6 py-10 text-center dark:border-zinc-700">
      <p className="text-sm font-medium">{title}</p>
      {children ? <div className="mt-1 text-sm text-zinc-500 dark:text-zinc-400">{children}</div> : null}
    </div>
  );
}

export function ErrorState({
  title = "Something went wrong",
  message,
  onRetry,
}: {
  title?: string;
  message: string;
  onRetry?: () => void;
}) {
  return (
    <div
      role="alert"
      className="rounded-lg border border-red-200 bg-red-50 px-4 py-3 text-sm text-red-900 dark:border-red-900 dark:bg-red-950 dark:text-red-200"
    >
      <p className="font-medium">{title}</p>
      <p className="mt-0.5">{message}</p>
      {onRetry ? (
        <Button size="sm" className="mt-2" onClick={onRetry}>
          Try again
        </Button>
      ) : null}
    </div>
  );
}

export function Skeleton({ className }: { className?: string }) {
  return <div aria-hidden="true" className={cn("animate-pulse rounded bg-zinc-200 dark:bg-zinc-800", className)} />;
}

export function LoadingBlock({ label = "Loading", rows = 3 }: { label?: string; rows?: number }) {
  return (
    <div role="status" aria-live="polite" className="space-y-2">
      <span className="sr-only">{label}…</span>
      {Array.from({ length: rows }, (_, i) => (
        <Skeleton key={i} className="h-8 w-full" />
      ))}
    </div>
  );
}

/**
 * What a loaded section shows before its content: a loading block while pending, the error
 * (rendered by the caller, who knows its codes) when it failed, an empty state when there is
 * nothing, else the children. One place for the order, so no page shows stale rows over an error.
 */
export function StatusGate({
  pending,
  error,
  renderError,
  loadingLabel = "Loading",
  loadingRows = 3,
  empty,
  children,
}: {
  pending: boolean;
  error: unknown;
  renderError?: (error: unknown) => ReactNode;
  loadingLabel?: string;
  loadingRows?: number;
  /** Shown instead of the children when set (the caller decides what "nothing" means). */
  empty?: ReactNode;
  children: () => ReactNode;
}) {
  if (pending) return <LoadingBlock label={loadingLabel} rows={loadingRows} />;
  if (error)
    return renderError ? (
      <>{renderError(error)}</>
    ) : (
      <ErrorState message={error instanceof Error ? error.message : String(error)} />
    );
  if (empty) return <>{empty}</>;
  return <>{children()}</>;
}
