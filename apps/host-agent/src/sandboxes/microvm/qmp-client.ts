// Minimal QMP client (QEMU Machine Protocol: one JSON object per line over a socket pair). Used for
// `cont` after a snapshot restore and for saving the warm-pool snapshot (stop + migrate).
import type net from "node:net";
import { sleep } from "../../timing.ts";
import { MicrovmError } from "./microvm-errors.ts";

type Reply = { return?: unknown; error?: { class: string; desc: string } };

export class QmpClient {
  private buffer = "";
  private waiting: Array<(r: Reply) => void> = [];
  private closed: Error | null = null;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => this.onData(chunk));
    socket.on("error", () => undefined); // close follows; pending calls fail there
    socket.on("close", () => {
      this.closed = new MicrovmError("MICROVM.VM_LOST", "QMP connection closed");
      for (const w of this.waiting.splice(0)) w({ error: { class: "Closed", desc: "QMP connection closed" } });
    });
  }

  /** Negotiates on the socket pair handed to QEMU at spawn (its greeting comes once QEMU is up). */
  static async over(socket: net.Socket, timeoutMs: number): Promise<QmpClient> {
    const client = new QmpClient(socket);
    await client.greeting(performance.now() + timeoutMs);
    await client.execute("qmp_capabilities");
    return client;
  }

  async execute(command: string, args?: Record<string, unknown>): Promise<unknown> {
    if (this.closed) throw this.closed;
    const reply = new Promise<Reply>((resolve) => this.waiting.push(resolve));
    this.socket.write(`${JSON.stringify(args ? { execute: command, arguments: args } : { execute: command })}\n`);
    const r = await reply;
    if (r.error) throw new MicrovmError("MICROVM.GUEST_PROTOCOL", `QMP ${command}: ${r.error.desc}`);
    return r.return;
  }

  close(): void {
    this.socket.destroy();
  }

  private greetingSeen = false;
  private greetingWaiter: (() => void) | null = null;

  private async greeting(deadline: number): Promise<void> {
    if (this.greetingSeen) return;
    await Promise.race([
      new Promise<void>((resolve) => (this.greetingWaiter = resolve)),
      sleep(Math.max(0, deadline - performance.now())).then(() => {
        if (!this.greetingSeen) throw new MicrovmError("MICROVM.BOOT_FAILED", "no QMP greeting");
      }),
    ]);
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    let nl: number;
    while ((nl = this.buffer.indexOf("\n")) >= 0) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (!line) continue;
      const msg = JSON.parse(line) as Reply & { QMP?: unknown; event?: string };
      if (msg.QMP) {
        this.greetingSeen = true;
        this.greetingWaiter?.();
      } else if (!msg.event) {
        this.waiting.shift()?.(msg);
      }
    }
  }
}
