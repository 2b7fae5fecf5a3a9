// argv for sandbox-contract-child.ts, run through tsx like the agent itself (npm run agent).
import { fileURLToPath } from "node:url";

export function contractChildArgv(args: string[]): string[] {
  const child = fileURLToPath(new URL("./sandbox-contract-child.ts", import.meta.url));
  return [process.execPath, "--import", "tsx", child, ...args];
}
