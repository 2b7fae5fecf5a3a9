// The platform's child processes by name: each one OS process (so a signal by pid reaches the
// program itself, not a wrapper), restartable with exactly the arguments and environment it had,
// with its recent output kept across restarts.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

/** keep: the last ~200 kB per process in memory; prefix: that, and each line echoed as `[name] line`;
 * ignore: nothing read (benchmarks: no pipe to drain). */
export type OutputMode = "keep" | "prefix" | "ignore";

export interface ProcessSpec {
  cmd: string;
  args: string[];
  cwd: string;
  env: Record<string, string | undefined>;
  /** Receives each stdout line (piped even when the output mode is "ignore"). */
  onStdoutLine?: (line: string) => void;
  /** What stop() sends first (SIGKILL unless set; a profiled web wants SIGINT to write its profile). */
  stopSignal?: NodeJS.Signals;
}

export interface ManagedProc {
  name: string;
  child: ChildProcess;
  /** The last ~200 kB of this process's output, across restarts. */
  output(): string;
  alive(): boolean;
}

const KEEP_BYTES = 200_000;

export class ManagedProcesses {
  private readonly specs = new Map<string, ProcessSpec>();
  private readonly procs = new Map<string, ManagedProc>();
  private readonly outputs = new Map<string, string>();
  private stopping = false;

  constructor(private readonly mode: OutputMode) {}

  launch(name: string, spec: ProcessSpec): ManagedProc {
    this.specs.set(name, spec);
    const pipeOut = this.mode !== "ignore" || spec.onStdoutLine !== undefined;
    const child = spawn(spec.cmd, spec.args, {
      cwd: spec.cwd,
      // A cast, not a copy: Next's types (apps/web compiles this file) make NODE_ENV required.
      env: spec.env as NodeJS.ProcessEnv,
      stdio: ["ignore", pipeOut ? "pipe" : "ignore", this.mode === "ignore" ? "ignore" : "pipe"],
    });
    const keep = (stream: NodeJS.WriteStream) => (b: Buffer) => {
      const text = b.toString("utf8");
      this.outputs.set(name, ((this.outputs.get(name) ?? "") + text).slice(-KEEP_BYTES));
      if (this.mode === "prefix")
        for (const line of text.split("\n")) if (line.trim()) stream.write(`[${name}] ${line}\n`);
    };
    if (this.mode !== "ignore") {
      child.stdout?.on("data", keep(process.stdout));
      child.stderr?.on("data", keep(process.stderr));
    }
    if (spec.onStdoutLine && child.stdout) {
      const onLine = spec.onStdoutLine;
      let buffered = "";
      child.stdout.on("data", (b: Buffer) => {
        buffered += b.toString("utf8");
        const lines = buffered.split("\n");
        buffered = lines.pop() ?? "";
        for (const l of lines) onLine(l);
      });
    }
    child.on("exit", (code, signal) => {
      if (this.mode === "prefix" && !this.stopping && this.procs.get(name)?.child === child)
        process.stderr.write(`[platform] ${name} exited (${signal ?? `code ${code}`})\n`);
    });
    const p: ManagedProc = {
      name,
      child,
      output: () => this.outputs.get(name) ?? "",
      alive: () => child.exitCode === null && child.signalCode === null,
    };
    this.procs.set(name, p);
    return p;
  }

  get(name: string): ManagedProc {
    const p = this.procs.get(name);
    if (!p) throw new Error(`no process named ${name}`);
    return p;
  }

  names(): string[] {
    return [...this.procs.keys()];
  }

  /** Sends a signal to the process itself (by pid). SIGKILL waits until it is gone. */
  async signal(name: string, sig: NodeJS.Signals): Promise<void> {
    const p = this.get(name);
    if (!p.alive()) return;
    if (sig !== "SIGKILL") {
      p.child.kill(sig);
      return;
    }
    const gone = new Promise<void>((resolve) => p.child.once("exit", () => resolve()));
    p.child.kill("SIGCONT"); // a frozen process cannot die until it runs again
    p.child.kill("SIGKILL");
    await gone;
  }

  /** Starts the named process again with its original arguments and environment. */
  async restart(name: string): Promise<ManagedProc> {
    const spec = this.specs.get(name);
    if (!spec) throw new Error(`no process named ${name}`);
    if (this.get(name).alive()) await this.signal(name, "SIGKILL");
    return this.launch(name, spec);
  }

  logs(names = this.names(), tail = 4000): string {
    return names.map((n) => `--- ${n}\n${(this.outputs.get(n) ?? "").slice(-tail)}`).join("\n");
  }

  /** Writes each process's retained output to <dir>/<name>.log (a failed soak's post-mortem). */
  async dumpLogs(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    for (const [name, out] of this.outputs) await writeFile(path.join(dir, `${name}.log`), out);
  }

  /**
   * Stops every process: those with a stopSignal get it and `graceMs` to exit (SIGKILL after),
   * the rest are SIGKILLed at once. Resolves when all have exited.
   */
  async stopAll(graceMs = 10_000): Promise<void> {
    this.stopping = true;
    await Promise.all(
      [...this.procs.keys()].map(async (name) => {
        const p = this.get(name);
        if (!p.alive()) return;
        const gone = new Promise<void>((resolve) => p.child.once("exit", () => resolve()));
        const first = this.specs.get(name)?.stopSignal;
        if (first) {
          p.child.kill("SIGCONT");
          p.child.kill(first);
          const timer = setTimeout(() => p.child.kill("SIGKILL"), graceMs);
          await gone;
          clearTimeout(timer);
          return;
        }
        p.child.kill("SIGCONT");
        p.child.kill("SIGKILL");
        await gone;
      }),
    );
  }
}
