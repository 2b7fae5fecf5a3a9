export {
  createLogger,
  silentLogger,
  writeStdoutLine,
  type Level,
  type LineWriter,
  type LogContext,
  type LogFields,
  type Logger,
  type LoggerOptions,
} from "./logger.ts";
export { errorMessage, redactUrlCredentials, redactValue, serializeError, type SerializedError } from "./redact.ts";
