// Structured JSON logs, one object per line (conventions rule 12). Child loggers carry the
// org/run/job/attempt ids at hand; every field passes through redaction before it is written.
import { REDACTED, SECRET_KEY, redactUrlCredentials, redactValue } from "./redact.ts";

export type Level = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

/** The ids a child logger usually carries; any other field is allowed too. */
export interface LogContext extends LogFields {
  service?: string;
  org_id?: string;
  run_id?: string;
  job_id?: string;
  attempt_id?: string;
}

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(fields: LogContext): Logger;
}

export type LineWriter = (line: string) => void;

export interface LoggerOptions {
  /** Records below this level are dropped. Default: "debug" (everything). */
  level?: Level;
}

const RANK: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const writeStdoutLine: LineWriter = (line) => {
  process.stdout.write(line.endsWith("\n") ? line : `${line}\n`);
};

/** A logger writing lines through `write`; pass `() => undefined` for a silent one (tests). */
export function createLogger(
  base: LogContext = {},
  write: LineWriter = writeStdoutLine,
  options: LoggerOptions = {},
): Logger {
  const min = RANK[options.level ?? "debug"];
  // Redacted once here rather than on every record: child fields are fixed for the logger's life.
  const safeBase = redactFields(base);
  const emit = (level: Level, msg: string, fields?: LogFields): void => {
    if (RANK[level] < min) return;
    const record = { ts: new Date().toISOString(), level, msg: redactUrlCredentials(msg), ...safeBase };
    write(JSON.stringify(fields ? Object.assign(record, redactFields(fields)) : record));
  };
  return {
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, fields) => emit("error", msg, fields),
    child: (fields) => createLogger({ ...base, ...fields }, write, options),
  };
}

/** A logger that writes nothing: for callers with nothing to say and tests that only assert results. */
export const silentLogger: Logger = createLogger({}, () => undefined);

function redactFields(fields: LogFields): LogFields {
  const out: LogFields = {};
  for (const [key, value] of Object.entries(fields)) {
    // ts/level/msg belong to the record; a field of the same name would silently overwrite them.
    const name = key === "ts" || key === "level" || key === "msg" ? `field_${key}` : key;
    out[name] = SECRET_KEY.test(key) ? REDACTED : redactValue(value);
  }
  return out;
}
