// Prometheus metrics of the control plane (docs/adr/0043): in-process observations and the fleet
// gauges read from PostgreSQL at scrape time.
export {
  controlPlaneRegistry,
  countFencingRefusal,
  observeAttemptPhases,
  observeClaim,
  observeTriggerPersistence,
} from "./process-metrics.ts";
export { registerFleetMetrics } from "./fleet-metrics.ts";
