// Step output to the control plane (docs/adr/0006-logs.md): capture, spool, ordered shipping, seal.
export { LogShipper, type LogShipperConfig } from "./log-shipper.ts";
