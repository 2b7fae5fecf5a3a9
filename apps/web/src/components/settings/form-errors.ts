import { TRPCClientError } from "@trpc/client";
import type { AppRouter } from "@/server/trpc/router.ts";

export interface FormErrors {
  /** Per-field messages from the server's input validation, keyed by input name. */
  fields: Record<string, string>;
  /** Anything not about one field (a domain refusal, a role change, the database being down). */
  message: string | null;
}

export const NO_ERRORS: FormErrors = { fields: {}, message: null };

/** Splits a failed mutation into messages to show beside their inputs and one for the form. */
export function formErrorsOf(e: unknown): FormErrors {
  if (e instanceof TRPCClientError) {
    const fields = (e as TRPCClientError<AppRouter>).data?.fieldErrors ?? null;
    if (fields && Object.keys(fields).length > 0) return { fields, message: null };
    return { fields: {}, message: e.message };
  }
  return { fields: {}, message: e instanceof Error ? e.message : String(e) };
}

/** A whole number typed into a field, or null when it was left empty. */
export function numberOrNull(v: FormDataEntryValue | null): number | null {
  const s = typeof v === "string" ? v.trim() : "";
  return s === "" ? null : Number(s);
}
