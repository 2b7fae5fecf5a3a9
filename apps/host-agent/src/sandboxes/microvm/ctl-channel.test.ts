import net, { type AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { CtlChannel, MAX_QUEUED_LINES } from "./ctl-channel.ts";

// The guest end of the control port is untrusted (issue 28): a guest that writes lines the host
// never asked for must not grow the agent's memory. A real socket pair stands in for QEMU's chardev.
const servers: net.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

async function pair(): Promise<{ host: CtlChannel; hostSocket: net.Socket; guest: net.Socket }> {
  const server = net.createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const accepted = new Promise<net.Socket>((r) => server.once("connection", r));
  const guest = net.connect((server.address() as AddressInfo).port, "127.0.0.1");
  await new Promise<void>((r) => guest.once("connect", () => r()));
  const hostSocket = await accepted;
  return { host: new CtlChannel(hostSocket), hostSocket, guest };
}

describe("CtlChannel", () => {
  it("answers question and answer as before, with a few lines ahead queued", async () => {
    const { host, guest } = await pair();
    guest.write("READY\nPONG 1\nPONG 2\n");
    expect(await host.expect("READY", 5_000)).toEqual([]);
    expect(await host.expect("PONG", 5_000)).toEqual(["1"]);
    expect(await host.expect("PONG", 5_000)).toEqual(["2"]);
    guest.destroy();
  });

  it("a guest flooding unread lines is cut off with MICROVM.GUEST_PROTOCOL, the queue dropped", async () => {
    const { host, hostSocket, guest } = await pair();
    const closed = new Promise<void>((r) => hostSocket.once("close", () => r()));
    guest.on("error", () => undefined);
    // Far more than the bound, written before the host reads anything.
    const flood = "EXIT 0\n".repeat(MAX_QUEUED_LINES * 40);
    guest.write(flood);
    await closed;
    await expect(host.next(1_000, "anything")).rejects.toMatchObject({
      code: "MICROVM.GUEST_PROTOCOL",
      message: expect.stringContaining("nobody asked for"),
    });
    expect(() => host.send("PING")).toThrow(/nobody asked for/);
  });

  it("long lines that stay under the line cap are bounded by bytes too", async () => {
    const { host, hostSocket, guest } = await pair();
    const closed = new Promise<void>((r) => hostSocket.once("close", () => r()));
    guest.on("error", () => undefined);
    guest.write(`${"x".repeat(4000)}\n`.repeat(40));
    await closed;
    await expect(host.next(1_000, "anything")).rejects.toMatchObject({ code: "MICROVM.GUEST_PROTOCOL" });
  });
});
