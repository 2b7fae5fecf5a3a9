// Builds the script the guest agent runs for one step: a clean environment (env -i, exactly the
// variables given), chroot into the job's root, cd into the working directory, `sh -c command`.
// Every value is single-quoted, so no byte of the command, env or path is interpreted by the
// agent's own shell.
import path from "node:path";
import { MicrovmError } from "./microvm-errors.ts";
import { GUEST_PATHS } from "./microvm-limits.ts";

const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;

function quote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

/** Guest path of the working directory; refuses anything that leaves the workspace. */
export function guestWorkingDirectory(relative: string | undefined): string {
  const ws = GUEST_PATHS.workspace;
  const cwd = path.posix.resolve(ws, relative ?? ".");
  if (cwd !== ws && !cwd.startsWith(`${ws}/`))
    throw new Error(`working directory ${JSON.stringify(relative)} is outside the workspace`);
  return cwd;
}

export function stepLauncher(command: string, env: Record<string, string>, cwd: string): string {
  const assignments = Object.entries(env).map(([k, v]) => {
    if (!ENV_KEY.test(k))
      throw new MicrovmError("MICROVM.BAD_INPUT", `invalid environment variable name ${JSON.stringify(k)}`);
    if (v.includes("\0")) throw new MicrovmError("MICROVM.BAD_INPUT", `environment variable ${k} contains a NUL byte`);
    return quote(`${k}=${v}`);
  });
  if (command.includes("\0")) throw new MicrovmError("MICROVM.BAD_INPUT", "command contains a NUL byte");
  const inner = 'cd "$1" || exit 1; exec /bin/sh -c "$2"';
  return `exec /bin/busybox env -i ${assignments.join(" ")} /bin/busybox chroot /newroot /bin/sh -c ${quote(inner)} kiln-step ${quote(cwd)} ${quote(command)}\n`;
}
