import { timingSafeEqual, createHash } from "node:crypto";
import { controlPlaneRegistry, registerFleetMetrics } from "@kiln/engine";
import { collectDefaultMetrics, type Registry } from "prom-client";
import { services } from "./context.ts";
import { env } from "./env.ts";

/**
 * The registry /metrics serialises: this process's observations plus the fleet gauges, added once
 * per process (the registry is per process, this module may be loaded once per route bundle).
 */
export function webMetricsRegistry(): Registry {
  if (!controlPlaneRegistry.getSingleMetric("kiln_job_outcomes_total")) {
    registerFleetMetrics(controlPlaneRegistry, services().db);
    collectDefaultMetrics({ register: controlPlaneRegistry, prefix: "kiln_web_" });
  }
  return controlPlaneRegistry;
}

/**
 * What the scrape's Authorization header earns: "disabled" when no token is configured (the route
 * answers 404), "refused" without the right bearer (401), "ok" otherwise. Digests are compared so
 * the comparison takes the same time whatever the length of the guess.
 */
export function checkMetricsToken(authorization: string | null): "disabled" | "refused" | "ok" {
  const want = env().KILN_METRICS_TOKEN;
  if (!want) return "disabled";
  const got = /^Bearer (.+)$/.exec(authorization ?? "")?.[1] ?? "";
  const digest = (s: string) => createHash("sha256").update(s).digest();
  return timingSafeEqual(digest(got), digest(want)) ? "ok" : "refused";
}
