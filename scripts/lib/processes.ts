import { spawn, type ChildProcess } from "node:child_process";

/** Children started by `npm run up`, stopped together on Ctrl-C. Output is prefixed per process. */
export class ProcessGroup {
  private readonly children: { name: string; child: ChildProcess }[] = [];
  private stopping = false;

  start(
    name: string,
    cmd: string,
    args: string[],
    opts: { cwd: string; env: NodeJS.ProcessEnv; onExit?: (code: number | null) => void },
  ): ChildProcess {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["ignore", "pipe", "pipe"] });
    const prefix = (chunk: Buffer, stream: NodeJS.WriteStream) => {
      for (const line of chunk.toString("utf8").split("\n")) if (line.trim()) stream.write(`[${name}] ${line}\n`);
    };
    child.stdout?.on("data", (c: Buffer) => prefix(c, process.stdout));
    child.stderr?.on("data", (c: Buffer) => prefix(c, process.stderr));
    child.on("exit", (code) => {
      if (!this.stopping) console.error(`[up] ${name} exited with code ${code}`);
      opts.onExit?.(code);
    });
    this.children.push({ name, child });
    return child;
  }

  async stopAll(timeoutMs = 8_000): Promise<void> {
    this.stopping = true;
    const alive = this.children.filter((c) => c.child.exitCode === null && c.child.signalCode === null);
    await Promise.all(
      alive.map(
        ({ child }) =>
          new Promise<void>((resolve) => {
            const t = setTimeout(() => {
              child.kill("SIGKILL");
              resolve();
            }, timeoutMs);
            child.once("exit", () => {
              clearTimeout(t);
              resolve();
            });
            child.kill("SIGTERM");
          }),
      ),
    );
  }
}

export async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`${url} did not answer within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function run(cmd: string, args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv }): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env ?? process.env, stdio: "inherit" });
    child.on("exit", (code) =>
      code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(" ")} exited with ${code}`)),
    );
    child.on("error", reject);
  });
}
