import type { RateSurface } from "@kiln/engine";
import type { RouteAuth } from "./route.ts";

/**
 * Whose buckets a route's callers are charged to (docs/adr/0044), by its declared auth. Machine
 * peers (agents, the forge) have budgets of their own; health, metrics and public reads none.
 */
export const RATE_SURFACE: Record<RouteAuth, RateSurface | null> = {
  api_token: "api",
  api_token_or_session: "api",
  agent_token: "agent",
  registration_token: "agent",
  job_token: "agent",
  webhook_signature: "webhook",
  metrics_token: null,
  none: null,
};
