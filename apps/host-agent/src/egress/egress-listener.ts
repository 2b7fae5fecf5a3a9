// One sandbox's own way into the proxy: a unix socket (process driver) or a TCP port on 127.0.0.1
// (QEMU guestfwd). Registered under the attempt id for the drivers (egress-registry.ts).
import { mkdir, rm } from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { registerEgressListener, unregisterEgressListener, type EgressListenerAddress } from "./egress-registry.ts";

export interface ListenerHandle {
  address: EgressListenerAddress;
  close(): Promise<void>;
}

// sockaddr_un's sun_path holds 108 bytes including the terminating NUL.
const MAX_SOCKET_PATH = 107;

export async function listen(
  kind: "unix" | "tcp",
  attemptId: string,
  socketDir: string,
  onConnection: (socket: net.Socket) => void,
): Promise<ListenerHandle> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    // A sandbox that vanishes mid-request must not crash the agent.
    socket.on("error", () => socket.destroy());
    onConnection(socket);
  });
  let address: EgressListenerAddress;
  if (kind === "unix") {
    await mkdir(socketDir, { recursive: true, mode: 0o700 });
    const socketPath = path.join(socketDir, `${attemptId}.sock`);
    if (Buffer.byteLength(socketPath) > MAX_SOCKET_PATH)
      throw new Error(`egress socket path too long for a unix socket (${socketPath}); use a shorter KILN_WORK_DIR`);
    await rm(socketPath, { force: true });
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(socketPath, () => resolve()));
    address = { kind: "unix", path: socketPath };
  } else {
    await new Promise<void>((resolve, reject) => server.once("error", reject).listen(0, "127.0.0.1", () => resolve()));
    const a = server.address();
    if (!a || typeof a === "string") throw new Error("egress listener has no TCP address");
    address = { kind: "tcp", port: a.port };
  }
  registerEgressListener(attemptId, address);
  return {
    address,
    close: async () => {
      unregisterEgressListener(attemptId);
      // The sandbox is gone by now: cut whatever it left open, then stop listening.
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (address.kind === "unix") await rm(address.path, { force: true });
    },
  };
}
