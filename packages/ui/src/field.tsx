import { useId, type InputHTMLAttributes } from "react";
import { cn } from "./cn.ts";

export const inputClasses = cn(
  "h-9 w-full rounded-md border border-zinc-300 bg-white px-2.5 text-sm text-zinc-900 shadow-sm",
  "focus-visible:outline-2 focus-visible:outline-offset-1 focus-visible:outline-blue-600 dark:focus-visible:outline-blue-400",
  "aria-[invalid=true]:border-red-500 dark:border-zinc-700 dark:bg-zinc-950 dark:text-zinc-100 dark:aria-[invalid=true]:border-red-500",
);

/**
 * A labelled input with its hint and error wired up for screen readers (aria-describedby,
 * aria-invalid). The error text comes from the server's per-field message, shown under the input.
 */
export function Field({
  label,
  hint,
  error,
  className,
  hideLabel = false,
  ...input
}: InputHTMLAttributes<HTMLInputElement> & {
  label: string;
  hint?: string;
  error?: string | null;
  hideLabel?: boolean;
}) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(" ") || undefined;
  return (
    <div className={cn("flex flex-col gap-1", className)}>
      <label
        htmlFor={id}
        className={cn("text-xs font-medium text-zinc-700 dark:text-zinc-300", hideLabel && "sr-only")}
      >
        {label}
      </label>
      <input
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy}
        className={inputClasses}
        {...input}
      />
      {hint ? (
        <p id={`${id}-hint`} className="text-xs text-zinc-500 dark:text-zinc-400">
          {hint}
        </p>
      ) : null}
      {error ? (
        <p id={`${id}-error`} className="text-xs text-red-700 dark:text-red-400">
          {error}
        </p>
      ) : null}
    </div>
  );
}
