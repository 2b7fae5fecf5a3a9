// One attempt's mediated egress: its own proxy listener, its decisions batched to the control
// plane, and each denial written into the job's stderr log so the user sees why a fetch failed.
import type { ControlClient, JobTicket } from "../control-client.ts";
import type { Logger } from "@kiln/logger";
import type { EgressProxy } from "./egress-proxy.ts";
import { EgressReporter } from "./egress-reporter.ts";
import type { EgressListenerAddress } from "./egress-registry.ts";
import type { IdTokenEndpoint } from "../identity/index.ts";

// A step retrying a denied host in a loop must not flood its own log; the events still count them.
const MAX_DENIAL_LINES = 50;
const CLOSE_FLUSH_MS = 5_000;

export interface AttemptEgress {
  address: EgressListenerAddress;
  /** After the sandbox is destroyed: stop listening and report what is left (bounded). */
  close(): Promise<void>;
}

export async function openAttemptEgress(deps: {
  proxy: EgressProxy;
  client: ControlClient;
  ticket: JobTicket;
  listen: "unix" | "tcp";
  writeLogLine: (line: string) => void;
  log: Logger;
  /** The attempt's ID token endpoint, served on this listener (docs/adr/0024). */
  idTokens?: IdTokenEndpoint;
}): Promise<AttemptEgress> {
  const { ticket, log } = deps;
  const reporter = new EgressReporter(deps.client, ticket, log);
  let denialLines = 0;
  const listener = await deps.proxy.open({
    attemptId: ticket.attemptId,
    trustClass: ticket.trustClass,
    policy: ticket.egress,
    listen: deps.listen,
    ...(deps.idTokens ? { idTokens: deps.idTokens } : {}),
    onDecision: (e) => reporter.record(e, new Date()),
    onDenied: (line) => {
      denialLines++;
      if (denialLines <= MAX_DENIAL_LINES) deps.writeLogLine(line);
      else if (denialLines === MAX_DENIAL_LINES + 1)
        deps.writeLogLine(`kiln egress: further denials not shown (see the run's egress record)`);
      log.info("egress denied", { line });
    },
  });
  if (!ticket.egress) log.warn("ticket carries no egress policy: the sandbox can reach nothing");
  return {
    address: listener.address,
    close: async () => {
      await listener.close();
      await reporter.close(CLOSE_FLUSH_MS);
    },
  };
}
