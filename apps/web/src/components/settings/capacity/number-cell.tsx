"use client";
import { inputClasses } from "@kiln/ui";

/**
 * A number input in a table cell that belongs to the row's form through its `form` attribute (a
 * form cannot wrap a table row), with a label for screen readers and the server's error under it.
 */
export function NumberInput({
  formId,
  name,
  label,
  value,
  error,
  min,
  max,
  autoFocus,
}: {
  formId: string;
  name: string;
  label: string;
  value: number | null;
  error?: string;
  min: number;
  max?: number;
  autoFocus?: boolean;
}) {
  const id = `${formId}-${name}`;
  return (
    <>
      <label htmlFor={id} className="sr-only">
        {label}
      </label>
      <input
        id={id}
        form={formId}
        name={name}
        type="number"
        inputMode="numeric"
        step={1}
        min={min}
        max={max}
        defaultValue={value ?? ""}
        placeholder={name === "hardCap" ? "none" : undefined}
        autoFocus={autoFocus}
        aria-invalid={error ? true : undefined}
        aria-describedby={error ? `${id}-error` : undefined}
        className={`${inputClasses} w-24`}
      />
      {error ? (
        <p id={`${id}-error`} className="mt-1 max-w-40 text-xs text-red-700 dark:text-red-400">
          {error}
        </p>
      ) : null}
    </>
  );
}

export const CELL = "py-2 pr-4 align-top";

/** The row's form refusal (not about one input), under its buttons. */
export function RowError({ message }: { message: string | null }) {
  return message ? (
    <p role="alert" className="mt-1 text-xs text-red-700 dark:text-red-400">
      {message}
    </p>
  ) : null;
}
