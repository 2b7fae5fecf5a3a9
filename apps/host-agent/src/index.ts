// Composition root: parse env, build the driver and client, start the agent, wire signals.
// `register` (issue 22) exchanges a registration token for a credential in a state directory.
import { HostAgent } from "./agent.ts";
import { ControlClient } from "./control-client.ts";
import { loadEnv } from "./env.ts";
import { createLogger, errorMessage } from "@kiln/logger";
import { resolveIdentity } from "./registration/identity.ts";
import { register } from "./registration/register.ts";
import { createSandboxDriver } from "./sandboxes/index.ts";
import { serveAgentMetrics } from "./metrics/index.ts";

if (process.argv[2] === "register") {
  try {
    process.exit(await register(process.argv.slice(3), (line) => process.stdout.write(`${line}\n`)));
  } catch (err) {
    process.stderr.write(`${errorMessage(err)}\n`);
    process.exit(1);
  }
}

let env;
let identity;
try {
  env = loadEnv();
  identity = await resolveIdentity(env);
  env = { ...env, KILN_CONTROL_URL: identity.controlUrl, KILN_AGENT_LABELS: identity.runnerLabels };
} catch (err) {
  process.stderr.write(`${errorMessage(err)}\n`);
  process.exit(1);
}

const logger = createLogger({ service: "host-agent", hostname: env.KILN_HOSTNAME });

try {
  const driver = await createSandboxDriver(env.KILN_SANDBOX_DRIVER, {
    workDir: env.KILN_WORK_DIR,
    logger,
    warmPoolSize: env.KILN_WARM_POOL_SIZE,
    warmPoolSizes: env.KILN_AGENT_SIZES,
    microvmAssetsDir: env.KILN_MICROVM_ASSETS,
    microvmAccel: env.KILN_MICROVM_ACCEL,
    allowUnisolated: env.KILN_ALLOW_UNISOLATED === "true",
  });
  await serveAgentMetrics({ host: env.KILN_METRICS_HOST, port: env.KILN_METRICS_PORT }, logger);
  const client = new ControlClient(env.KILN_CONTROL_URL, identity.credential);
  const agent = new HostAgent({ env, client, driver, logger });
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.once(signal, () => {
      logger.info("signal received", { signal });
      void agent.stop().then(() => process.exit(0));
    });
  }
  // The cloud's reclaim notice for an interruptible host (issue 22): whatever relays the provider's
  // drain notice sends SIGUSR2; running jobs report host.reclaimed and the agent exits.
  process.once("SIGUSR2", () => {
    logger.warn("reclaim notice received", { signal: "SIGUSR2" });
    void agent.reclaim().then(() => process.exit(0));
  });
  await agent.run();
  // run() resolves once the loops ended (a reclaim notice from the control plane): let the stop that
  // ended them finish reporting the running jobs, then exit.
  await agent.stop();
  process.exit(0);
} catch (err) {
  logger.error("host agent stopped on a fatal error", { error: errorMessage(err) });
  process.exit(1);
}
