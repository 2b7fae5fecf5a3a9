import { assertDevLoginAllowed } from "./server/auth/env.ts";

// Next calls register() once when the server starts, before it serves anything: the place to refuse
// a configuration that must never serve a request (the development sign-in where a real
// deployment would be; see server/auth/env.ts). The app has no edge runtime code.
export function register(): void {
  assertDevLoginAllowed();
}
