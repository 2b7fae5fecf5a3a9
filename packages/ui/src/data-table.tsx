import { Fragment, type HTMLAttributes, type KeyboardEvent, type ReactNode } from "react";
import { cn } from "./cn.ts";
import { Skeleton } from "./states.tsx";

export interface Column<T> {
  /** Stable key of the column (React key, and the cell's data-field, which e2e tests read). */
  key: string;
  header: ReactNode;
  cell: (row: T) => ReactNode;
  /** The header is for screen readers only (an actions column). */
  hideHeader?: boolean;
  className?: string;
}

/**
 * The admin pages' table: column headers with scope, an empty state instead of a headless table,
 * skeleton rows while loading, and rows a keyboard can reach: with `onActivate` a row is focusable
 * and Enter or Space opens it; the buttons in a row are focusable as buttons are.
 */
export function DataTable<T>({
  rows,
  columns,
  rowKey,
  rowProps,
  empty,
  loading = false,
  loadingRows = 3,
  onActivate,
  renderRow,
  testId,
  caption,
  className,
}: {
  rows: readonly T[] | undefined;
  columns: readonly Column<T>[];
  rowKey: (row: T) => string;
  /** Extra attributes per row (data-* hooks the tests and e2e read). */
  rowProps?: (row: T) => HTMLAttributes<HTMLTableRowElement> & Record<`data-${string}`, string | undefined>;
  empty?: ReactNode;
  loading?: boolean;
  loadingRows?: number;
  onActivate?: (row: T) => void;
  /** A row with state of its own (edited in place): rendered whole, columns give the headers. */
  renderRow?: (row: T) => ReactNode;
  testId?: string;
  caption?: string;
  className?: string;
}) {
  if (!loading && rows !== undefined && rows.length === 0 && empty) return <>{empty}</>;
  return (
    <div className="overflow-x-auto">
      <table
        className={cn("w-full text-left text-sm", className)}
        data-testid={testId}
        aria-busy={loading || rows === undefined || undefined}
      >
        {caption ? <caption className="sr-only">{caption}</caption> : null}
        <thead className="text-xs text-zinc-500 dark:text-zinc-400">
          <tr>
            {columns.map((c) => (
              <th key={c.key} scope="col" className="py-1.5 pr-3 font-medium">
                {c.hideHeader ? <span className="sr-only">{c.header}</span> : c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody className="divide-y divide-zinc-100 dark:divide-zinc-800">
          {loading || rows === undefined ? (
            <LoadingRows columns={columns.length} rows={loadingRows} />
          ) : (
            rows.map((row) =>
              renderRow ? (
                <Fragment key={rowKey(row)}>{renderRow(row)}</Fragment>
              ) : (
                <DataRow key={rowKey(row)} row={row} columns={columns} rowProps={rowProps} onActivate={onActivate} />
              ),
            )
          )}
        </tbody>
      </table>
    </div>
  );
}

function DataRow<T>({
  row,
  columns,
  rowProps,
  onActivate,
}: {
  row: T;
  columns: readonly Column<T>[];
  rowProps?: (row: T) => HTMLAttributes<HTMLTableRowElement>;
  onActivate?: (row: T) => void;
}) {
  const onKeyDown = (e: KeyboardEvent<HTMLTableRowElement>) => {
    // Only the row itself: Enter on a button inside the row presses that button.
    if (!onActivate || e.target !== e.currentTarget) return;
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      onActivate(row);
    }
  };
  return (
    <tr
      {...rowProps?.(row)}
      tabIndex={onActivate ? 0 : undefined}
      onKeyDown={onActivate ? onKeyDown : undefined}
      onClick={onActivate ? () => onActivate(row) : undefined}
      className={cn(
        onActivate &&
          "cursor-pointer hover:bg-zinc-50 focus-visible:outline-2 focus-visible:outline-blue-600 dark:hover:bg-zinc-800/50",
      )}
    >
      {columns.map((c) => (
        <td key={c.key} data-field={c.key} className={cn("py-2 pr-3 align-top", c.className)}>
          {c.cell(row)}
        </td>
      ))}
    </tr>
  );
}

function LoadingRows({ columns, rows }: { columns: number; rows: number }) {
  return (
    <>
      {Array.from({ length: rows }, (_, i) => (
        <tr key={i}>
          <td colSpan={columns} className="py-2">
            <span role={i === 0 ? "status" : undefined} className="sr-only">
              {i === 0 ? "Loading…" : ""}
            </span>
            <Skeleton className="h-5 w-full" />
          </td>
        </tr>
      ))}
    </>
  );
}
