import { createLogger, type Logger } from "@kiln/logger";

let logger: Logger | null = null;

/**
 * The web process's root logger (JSON lines on stdout). Apart from services() because some failures
 * (the error map, tRPC's onError) are logged without the database clients services() would create.
 */
export function webLogger(): Logger {
  logger ??= createLogger({ service: "web" });
  return logger;
}
