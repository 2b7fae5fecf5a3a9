// Runs s3rver in its own process so the object store does not share an event loop (and its MD5
// hashing) with the client being measured, as a real store would not. Prints its endpoint as JSON.
// With "stock": s3rver exactly as published, without the S3-style multipart assembly that Kiln's
// embedded store adds (scripts/lib/embedded-services.ts), for the before/after row.
// Usage (by run.ts): node --import tsx bench/artifacts/s3-process.ts <dataDir> [stock]
/// <reference path="../../scripts/lib/s3rver.d.ts" />
import { startS3 } from "@kiln/testkit";
import S3rver from "s3rver";

const dataDir = process.argv[2];
if (!dataDir) throw new Error("usage: s3-process.ts <dataDir> [stock]");
const s3 = process.argv[3] === "stock" ? await startStock(dataDir) : await startS3({ dataDir, bucket: "kiln" });

async function startStock(directory: string): Promise<{ endpoint: string; stop: () => Promise<void> }> {
  const server = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory,
    configureBuckets: [{ name: "kiln" }],
  });
  const { port } = await server.run();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: async () => {
      server.httpServer?.closeAllConnections();
      await server.close();
    },
  };
}
process.stdout.write(`${JSON.stringify({ endpoint: s3.endpoint })}\n`);
const stop = () => void s3.stop().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
