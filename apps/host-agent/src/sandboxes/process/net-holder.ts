// A root agent's per-sandbox network namespace with its egress forwarder (egress-forwarder.ts):
// started once, at the sandbox's first step, as `unshare --net -- perl <forwarder> hold <socket>`.
// Every step then runs as `nsenter --net=/proc/<holder>/ns/net -- unshare <pid,ipc,uts,mount> ...`,
// so a step costs what it cost before egress existed (creating a network namespace per step is
// itself slower than entering one). The holder's cwd is "/", outside the sandbox, so the per-step
// sweep of processes under the sandbox never kills it; destroy() does. Its stdin is a pipe from the
// agent that is never written: if the agent dies without destroying, EOF ends the holder too.
import { spawn, type ChildProcess } from "node:child_process";
import { holderArgv, type ForwarderTools } from "./egress-forwarder.ts";

const READY_TIMEOUT_MS = 10_000;

export class NetHolder {
  private exited = false;

  private constructor(
    private readonly child: ChildProcess,
    readonly pid: number,
  ) {
    child.once("exit", () => (this.exited = true));
  }

  /** False once the forwarder is gone: its pid (and so the /proc path) must never be used again. */
  get alive(): boolean {
    return !this.exited;
  }

  get netnsPath(): string {
    return `/proc/${this.pid}/ns/net`;
  }

  static start(unsharePath: string, tools: ForwarderTools, socketPath: string): Promise<NetHolder> {
    const child = spawn(unsharePath, ["--net", "--", ...holderArgv(tools, socketPath)], {
      cwd: "/",
      env: {},
      stdio: ["pipe", "pipe", "pipe"],
    });
    return new Promise((resolve, reject) => {
      let err = "";
      const timer = setTimeout(() => fail(new Error("egress forwarder did not start in time")), READY_TIMEOUT_MS);
      const fail = (e: Error) => {
        clearTimeout(timer);
        child.kill("SIGKILL");
        reject(e);
      };
      child.stderr?.on("data", (b: Buffer) => (err = (err + b.toString()).slice(-500)));
      child.once("error", fail);
      child.once("exit", (code, signal) =>
        fail(new Error(`egress forwarder exited (${signal ?? code}) before it was ready: ${err.trim()}`)),
      );
      child.stdout?.once("data", (b: Buffer) => {
        if (!b.toString().startsWith("ready") || child.pid === undefined)
          return fail(new Error(`egress forwarder said ${JSON.stringify(b.toString())}`));
        clearTimeout(timer);
        child.removeAllListeners("exit");
        // unshare execs perl in place, so this pid is the forwarder and owns the namespace.
        resolve(new NetHolder(child, child.pid));
      });
    });
  }

  stop(): void {
    this.child.kill("SIGKILL");
  }
}
