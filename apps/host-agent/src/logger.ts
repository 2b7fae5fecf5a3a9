// Structured JSON logs, one object per line on stdout (conventions rule 12). Child loggers carry
// run/job/attempt ids. Secrets are redacted by key so a careless `{ token }` field never leaks.
type Level = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

const SECRET_KEY = /token|authorization|secret|password|credential|cookie/i;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogFields): Logger;
}

export type LineWriter = (line: string) => void;

export const writeStdoutLine: LineWriter = (line) => {
  process.stdout.write(line.endsWith("\n") ? line : `${line}\n`);
};

export function createLogger(base: LogFields = {}, write: LineWriter = writeStdoutLine): Logger {
  const emit = (level: Level, msg: string, fields?: LogFields): void => {
    const record = { ts: new Date().toISOString(), level, msg, ...redact(base), ...redact(fields ?? {}) };
    write(JSON.stringify(record));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger({ ...base, ...fields }, write),
  };
}

function redact(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    if (SECRET_KEY.test(key)) out[key] = "[redacted]";
    else if (value instanceof Error) out[key] = { name: value.name, message: value.message };
    else out[key] = value;
  }
  return out;
}

/** Hides `user:password@` in URLs (clone URLs may carry a forge token) before logging/reporting. */
export function redactUrlCredentials(text: string): string {
  return text.replace(/([a-z][a-z0-9+.-]*:\/\/)[^/@\s]+@/gi, "$1***@");
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
