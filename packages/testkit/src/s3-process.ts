// The embedded S3 store in a child process of its own, for benchmarks: the store must not share an
// event loop (and its MD5 hashing) with the client being measured, as a real store would not. This
// file is also the child: run as a program, it starts the store and prints its endpoint and
// credentials as one JSON line (node --import tsx s3-process.ts <dataDir> <bucket> [stock]).
import { spawn } from "node:child_process";
import S3rver from "s3rver";
import { once } from "./child-process.ts";
import { startS3, type S3Handle } from "./embedded-s3.ts";

export async function startS3Process(opts: {
  dataDir: string;
  bucket?: string;
  /** s3rver exactly as published (no S3-style multipart assembly, its public key pair), for before/after rows. */
  stock?: boolean;
}): Promise<S3Handle & { pid: number }> {
  const bucket = opts.bucket ?? "kiln";
  const child = spawn(
    process.execPath,
    ["--import", "tsx", import.meta.filename, opts.dataDir, bucket, ...(opts.stock ? ["stock"] : [])],
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

async function startStock(directory: string, name: string): Promise<S3Handle> {
  const server = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory, configureBuckets: [{ name }] });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    region: "us-east-1",
    // s3rver's published default pair: the stock row measures s3rver as shipped.
    accessKeyId: "S3RVER",
    secretAccessKey: "S3RVER",
    bucket: name,
    stop: async () => {
      server.httpServer?.closeAllConnections();
      await server.close();
    },
  };
}

if (import.meta.main) {
  const [dataDir, bucket = "kiln", mode] = process.argv.slice(2);
  if (!dataDir) throw new Error("usage: s3-process.ts <dataDir> <bucket> [stock]");
  const s3 = mode === "stock" ? await startStock(dataDir, bucket) : await startS3({ dataDir, bucket });
  const { stop: _stop, ...info } = s3;
  process.stdout.write(`${JSON.stringify(info)}\n`);
  const stop = () => void s3.stop().then(() => process.exit(0));
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
