// The embedded S3 store in a child process of its own, for benchmarks: the store must not share an
// event loop (and its MD5 hashing) with the client being measured, as a real store would not.
import { spawn } from "node:child_process";
import path from "node:path";
import { once } from "./child-process.ts";
import type { S3Handle } from "./embedded-s3.ts";

export async function startS3Process(opts: {
  dataDir: string;
  bucket?: string;
  /** s3rver exactly as published (no S3-style multipart assembly, its public key pair), for before/after rows. */
  stock?: boolean;
}): Promise<S3Handle & { pid: number }> {
  const bucket = opts.bucket ?? "kiln";
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      path.join(import.meta.dirname, "s3-process-main.ts"),
      opts.dataDir,
      bucket,
      ...(opts.stock ? ["stock"] : []),
    ],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const info = await new Promise<Omit<S3Handle, "stop">>((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (d: Buffer) => {
      out += d.toString("utf8");
      const nl = out.indexOf("\n");
      if (nl >= 0) resolve(JSON.parse(out.slice(0, nl)) as Omit<S3Handle, "stop">);
    });
    child.once("exit", (code) => reject(new Error(`the S3 process exited with ${code} before it listened`)));
  });
  const stop = once(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await exited;
  });
  return { ...info, pid: child.pid ?? 0, stop };
}
