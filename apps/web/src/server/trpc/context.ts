import { currentUser } from "../auth/index.ts";
import { services } from "../context.ts";
import type { TrpcContext } from "./init.ts";

/** Per request: the database and the session's user (null when signed out). */
export async function createTrpcContext(): Promise<TrpcContext> {
  return { db: services().db, user: await currentUser() };
}
