// Every CLI command, in the order the usage lists them. Add a capability's module with one line here.
import type { CliCommand } from "./command.ts";
import { attestationCommands } from "./attestation.ts";
import { capacityCommands } from "./capacity.ts";
import { consoleCommands } from "./console.ts";
import { credentialCommands } from "./credentials.ts";
import { egressCommands } from "./egress.ts";
import { environmentCommands } from "./environments.ts";
import { fleetCommands } from "./fleet.ts";
import { forgeCommands } from "./forge.ts";
import { secretCommands } from "./secrets.ts";
import { auditCommands } from "./audit.ts";
import { identityCommands } from "./identity.ts";
import { retentionCommands } from "./retention.ts";
import { runCommands } from "./runs.ts";
import { runnerCommands } from "./runners.ts";
import { scheduleCommands } from "./schedules.ts";
import { tenantCommands } from "./tenants.ts";
import { tlogCommands } from "./tlog.ts";
import { shreddingCommands } from "./shredding.ts";
import { deploymentCommands } from "./deployments.ts";
import { imageCommands } from "./images.ts";
import { usageCommands } from "./usage.ts";

export const commands: CliCommand[] = [
  ...tenantCommands,
  ...consoleCommands,
  ...credentialCommands,
  ...capacityCommands,
  ...runnerCommands,
  ...fleetCommands,
  ...egressCommands,
  ...forgeCommands,
  ...attestationCommands,
  ...secretCommands,
  ...auditCommands,
  ...retentionCommands,
  ...identityCommands,
  ...runCommands,
  ...scheduleCommands,
  ...environmentCommands,
  ...tlogCommands,
  ...shreddingCommands,
  ...deploymentCommands,
  ...imageCommands,
  ...usageCommands,
];
