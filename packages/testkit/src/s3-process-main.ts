// Child entry of startS3Process: starts the store and prints its endpoint and credentials as one
// JSON line. Usage: node --import tsx s3-process-main.ts <dataDir> <bucket> [stock]
import S3rver from "s3rver";
import { startS3, type S3Handle } from "./embedded-s3.ts";

const [dataDir, bucket = "kiln", mode] = process.argv.slice(2);
if (!dataDir) throw new Error("usage: s3-process-main.ts <dataDir> <bucket> [stock]");
const s3 = mode === "stock" ? await startStock(dataDir, bucket) : await startS3({ dataDir, bucket });

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

const { stop: _stop, ...info } = s3;
process.stdout.write(`${JSON.stringify(info)}\n`);
const stop = () => void s3.stop().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
