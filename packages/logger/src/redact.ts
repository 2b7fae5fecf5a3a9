// What a log record may carry. Redaction is by key because values cannot be recognised reliably: a
// careless `{ token }`, `{ headers: { authorization } }` or `{ s3: { secretAccessKey } }` must never
// reach a log line, however deep it sits.
export const SECRET_KEY = /token|authorization|secret|password|passwd|credential|cookie|api[-_]?key|private[-_]?key/i;

export const REDACTED = "[redacted]";

/** Nesting below this is cut (a log record is not a payload dump; conventions rule 12). */
const MAX_DEPTH = 6;
/** Causes are followed this far: a cause chain is rarely longer, a cycle always is. */
const MAX_CAUSE_DEPTH = 3;
/** Error messages past this are cut: some (Prisma's, a failed query's) quote whole statements. */
const MAX_ERROR_MESSAGE = 2_000;

/** Hides `user:password@` in URLs (clone URLs may carry a forge token) before logging/reporting. */
export function redactUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, "$1***@");
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

export interface SerializedError {
  name: string;
  message: string;
  code?: string | number;
  cause?: SerializedError | string;
}

/** An Error as a plain object: JSON.stringify turns Errors into `{}`, losing everything useful. */
export function serializeError(err: Error, depth = 0): SerializedError {
  const out: SerializedError = {
    name: err.name,
    message: redactUrlCredentials(err.message.slice(0, MAX_ERROR_MESSAGE)),
  };
  const code = (err as { code?: unknown }).code;
  if (typeof code === "string" || typeof code === "number") out.code = code;
  const cause: unknown = err.cause;
  if (cause !== undefined && depth < MAX_CAUSE_DEPTH) {
    out.cause =
      cause instanceof Error
        ? serializeError(cause, depth + 1)
        : redactUrlCredentials(String(cause).slice(0, MAX_ERROR_MESSAGE));
  }
  return out;
}

/** A copy of `value` safe to log: secret keys redacted at any depth, Errors serialised, URL credentials hidden. */
export function redactValue(value: unknown, depth = 0, seen: WeakSet<object> = new WeakSet()): unknown {
  if (typeof value === "string") return redactUrlCredentials(value);
  if (typeof value === "bigint") return value.toString();
  if (value === null || typeof value !== "object") return value;
  if (value instanceof Error) return serializeError(value);
  if (value instanceof Date) return value.toISOString();
  if (value instanceof URL) return redactUrlCredentials(value.href);
  if (seen.has(value)) return "[circular]";
  if (depth >= MAX_DEPTH) return "[truncated]";
  seen.add(value);
  try {
    if (Array.isArray(value)) return value.map((v: unknown) => redactValue(v, depth + 1, seen));
    const out: Record<string, unknown> = {};
    for (const [key, v] of Object.entries(value)) {
      out[key] = SECRET_KEY.test(key) ? REDACTED : redactValue(v, depth + 1, seen);
    }
    return out;
  } finally {
    // Only ancestors count as cycles: the same object logged twice side by side is fine.
    seen.delete(value);
  }
}
