// Every CLI command, in the order the usage lists them. Add a capability's module with one line here.
import type { CliCommand } from "./command.ts";
import { attestationCommands } from "./attestation.ts";
import { capacityCommands } from "./capacity.ts";
import { consoleCommands } from "./console.ts";
import { credentialCommands } from "./credentials.ts";
import { egressCommands } from "./egress.ts";
import { environmentCommands } from "./environments.ts";
import { forgeCommands } from "./forge.ts";
import { secretCommands } from "./secrets.ts";
import { auditCommands } from "./audit.ts";
import { identityCommands } from "./identity.ts";
import { runCommands } from "./runs.ts";
import { scheduleCommands } from "./schedules.ts";
import { tenantCommands } from "./tenants.ts";
import { tlogCommands } from "./tlog.ts";
import { deploymentCommands } from "./deployments.ts";

export const commands: CliCommand[] = [
  ...tenantCommands,
  ...consoleCommands,
  ...credentialCommands,
  ...capacityCommands,
  ...egressCommands,
  ...forgeCommands,
  ...attestationCommands,
  ...secretCommands,
  ...auditCommands,
  ...identityCommands,
  ...runCommands,
  ...scheduleCommands,
  ...environmentCommands,
  ...tlogCommands,
  ...deploymentCommands,
];
