import { type FormEvent, type ReactNode, type Ref, type SelectHTMLAttributes, useId } from "react";
import { Button } from "./button.tsx";
import { cn } from "./cn.ts";
import { inputClasses } from "./field.tsx";
import { Notice } from "./notice.tsx";

/**
 * An admin form: labelled fields (children), a submit button that says it is working and cannot
 * be pressed twice, and the server's refusal under it. `noValidate` because the server's messages
 * are the ones shown (beside their field via `Field`'s error); the browser's bubbles would differ.
 * `onSubmit` receives the form's data and the element (to reset it or focus a field afterwards).
 */
export function Form({
  label,
  title,
  onSubmit,
  pending,
  disabled = false,
  submitLabel,
  pendingLabel,
  error,
  note,
  autoComplete,
  children,
  footer,
  className,
  testId,
  id,
  submitVariant = "primary",
  layout = "row",
  formRef,
}: {
  /** The form's accessible name. */
  label: string;
  /** A visible heading, when the form is a section of its own. */
  title?: ReactNode;
  onSubmit: (data: FormData, form: HTMLFormElement) => void;
  pending: boolean;
  /** Nothing to submit yet (e.g. no choices loaded): the button is disabled without "pending". */
  disabled?: boolean;
  submitLabel: string;
  pendingLabel: string;
  /** The server's refusal of the whole form (a string, or a code and message). */
  error?: ReactNode;
  /** The last success, announced politely (rendered only when the caller keeps one). */
  note?: string | null;
  autoComplete?: "on" | "off";
  children?: ReactNode;
  /** Below the fields, above the error (a hint, a second action). */
  footer?: ReactNode;
  className?: string;
  testId?: string;
  id?: string;
  submitVariant?: "primary" | "secondary" | "danger";
  /** Fields and the button on one wrapping row (the default); or fields in two columns, or
   *  stacked, with the button under them. */
  layout?: "row" | "grid" | "stack";
  /** The form element, for resetting it or focusing a field after a success. */
  formRef?: Ref<HTMLFormElement>;
}) {
  const submit = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    if (pending || disabled) return;
    onSubmit(new FormData(e.currentTarget), e.currentTarget);
  };
  const button = (
    <Button
      type="submit"
      variant={submitVariant}
      className={layout === "row" ? "mt-5" : "mt-3"}
      disabled={pending || disabled}
      aria-busy={pending || undefined}
    >
      {pending ? pendingLabel : submitLabel}
    </Button>
  );
  return (
    <form
      ref={formRef}
      id={id}
      noValidate
      autoComplete={autoComplete}
      onSubmit={submit}
      className={className}
      data-testid={testId}
      aria-label={label}
    >
      {title ? <h3 className="mb-2 text-sm font-semibold">{title}</h3> : null}
      <div className={LAYOUTS[layout]}>
        {children}
        {layout === "row" ? button : null}
      </div>
      {footer}
      <Notice tone="error">{error}</Notice>
      {note === undefined ? null : <Notice tone="success">{note}</Notice>}
      {layout === "row" ? null : button}
    </form>
  );
}

const LAYOUTS = {
  row: "flex flex-wrap items-start gap-3",
  grid: "grid gap-3 sm:grid-cols-2",
  stack: "flex flex-col gap-3",
} as const;

/** A labelled select, wired like `Field` (hint and error described, invalid when in error). */
export function SelectField({
  label,
  hint,
  error,
  className,
  selectClassName,
  children,
  ...select
}: SelectHTMLAttributes<HTMLSelectElement> & {
  label: string;
  hint?: ReactNode;
  error?: string | null;
  selectClassName?: string;
}) {
  const id = useId();
  const describedBy = [hint ? `${id}-hint` : null, error ? `${id}-error` : null].filter(Boolean).join(" ") || undefined;
  return (
    <div className={cn("flex flex-col gap-1", className)}>
      <label htmlFor={id} className="text-xs font-medium text-zinc-700 dark:text-zinc-300">
        {label}
      </label>
      <select
        id={id}
        aria-invalid={error ? true : undefined}
        aria-describedby={describedBy}
        className={cn(inputClasses, selectClassName)}
        {...select}
      >
        {children}
      </select>
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
