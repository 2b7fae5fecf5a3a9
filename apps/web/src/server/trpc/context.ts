import { currentUser } from "../auth/index.ts";
import { authEnvProblem } from "../auth/env.ts";
import { services } from "../context.ts";
import { limitDashboard } from "../http/rate-limit.ts";
import type { TrpcContext } from "./init.ts";

/**
 * Per request: the database and the session's user (null when signed out). A server whose sign-in
 * is not configured has no signed-in users, yet still answers public procedures (the transparency
 * log's status), as the home page does.
 */
export async function createTrpcContext(): Promise<TrpcContext> {
  return {
    db: services().db,
    user: authEnvProblem() === null ? await currentUser() : null,
    rateLimit: limitDashboard,
  };
}
