// Runs s3rver in its own process so the object store does not share an event loop (and its MD5
// hashing) with the client being measured, as a real store would not. Prints its endpoint as JSON.
// Usage (by run.ts): node --import tsx bench/artifacts/s3-process.ts <dataDir>
import { startS3 } from "@kiln/testkit";

const dataDir = process.argv[2];
if (!dataDir) throw new Error("usage: s3-process.ts <dataDir>");
const s3 = await startS3({ dataDir, bucket: "kiln" });
process.stdout.write(`${JSON.stringify({ endpoint: s3.endpoint })}\n`);
const stop = () => void s3.stop().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
