// Moves the workspace between host and guest as a tar stream on the "data" port: in before the
// first step (the agent checked it out into hostWorkspaceDir), out on request (artifacts). The
// guest's tar is untrusted: extraction refuses anything but files, directories and symlinks,
// keeps paths inside the target (node-tar's default) and drops owners and setuid bits.
import { randomBytes } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rm, stat } from "node:fs/promises";
import type net from "node:net";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { create, extract } from "tar";
import type { CtlChannel } from "./ctl-channel.ts";
import { MicrovmError } from "./microvm-errors.ts";

const TRANSFER_TIMEOUT_MS = 300_000;
const ALLOWED_TYPES = new Set(["File", "OldFile", "ContiguousFile", "Directory", "SymbolicLink"]);

export async function pushWorkspace(
  ctl: CtlChannel,
  data: net.Socket,
  hostDir: string,
  scratchDir: string,
): Promise<void> {
  const tarFile = path.join(scratchDir, `push-${randomBytes(4).toString("hex")}.tar`);
  try {
    await create({ cwd: hostDir, file: tarFile, portable: true }, ["."]);
    const { size } = await stat(tarFile);
    ctl.send(`PUT ${size}`);
    await pipeline(createReadStream(tarFile), data, { end: false });
    const reply = await ctl.next(TRANSFER_TIMEOUT_MS, "PUT");
    if (reply !== "PUT-OK")
      throw new MicrovmError("MICROVM.GUEST_PROTOCOL", `workspace injection failed: ${reply.slice(0, 300)}`);
  } finally {
    await rm(tarFile, { force: true });
  }
}

export async function pullWorkspace(
  ctl: CtlChannel,
  data: net.Socket,
  hostDir: string,
  scratchDir: string,
  maxBytes: number,
): Promise<void> {
  ctl.send("PULL");
  const [sizeText] = await ctl.expect("PULL", TRANSFER_TIMEOUT_MS);
  const size = Number(sizeText);
  if (!Number.isSafeInteger(size) || size < 0 || size > maxBytes)
    throw new MicrovmError("MICROVM.GUEST_PROTOCOL", `workspace tar size ${sizeText} refused`);
  const tarFile = path.join(scratchDir, `pull-${randomBytes(4).toString("hex")}.tar`);
  try {
    await receiveExactly(data, size, tarFile);
    await rm(hostDir, { recursive: true, force: true });
    await mkdir(hostDir, { mode: 0o700 });
    await extract({
      cwd: hostDir,
      file: tarFile,
      preserveOwner: false,
      noChmod: false,
      strict: true,
      filter: keepSafeEntry,
    });
  } finally {
    await rm(tarFile, { force: true });
  }
}

/** Only plain files, directories and symlinks; permission bits only (no setuid/setgid/sticky). */
function keepSafeEntry(_path: string, entry: unknown): boolean {
  const e = entry as { type: string; mode?: number };
  if (e.mode !== undefined) e.mode &= 0o777;
  return ALLOWED_TYPES.has(e.type);
}

function receiveExactly(socket: net.Socket, size: number, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = createWriteStream(file, { mode: 0o600 });
    let left = size;
    const finish = (err?: Error) => {
      socket.off("data", onData);
      socket.off("close", onClose);
      out.end(() => (err ? reject(err) : resolve()));
    };
    const onData = (chunk: Buffer) => {
      const take = chunk.subarray(0, left);
      left -= take.length;
      out.write(take);
      if (left === 0) finish();
    };
    const onClose = () => finish(new MicrovmError("MICROVM.VM_LOST", "VM exited during workspace transfer"));
    if (size === 0) return finish();
    socket.on("data", onData);
    socket.on("close", onClose);
  });
}
