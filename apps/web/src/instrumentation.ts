import { devLoginRefusalOfProcess } from "./server/auth/env.ts";
import { webLogger } from "./server/logger.ts";

// Next calls register() once when the server starts, before it serves anything: the place to refuse
// a configuration that must never serve a request (the development sign-in where a real
// deployment would be; see server/auth/env.ts). Next only logs an error thrown here and keeps the
// process up, so a refusal exits: a deployment must see the server fail to start, naming the
// setting, not a server that answers errors. The app has no edge runtime code.
export function register(): void {
  const refusal = devLoginRefusalOfProcess();
  if (!refusal) return;
  webLogger().error(`refusing to start: ${refusal}`, { setting: "KILN_DEV_LOGIN" });
  process.exit(1);
}
