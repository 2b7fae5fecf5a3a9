// Publishes Kiln's base image (busybox-static, see packages/testkit/src/base-image.ts) to a registry:
//   npm run publish-base-image -- 127.0.0.1:5000 [kiln/base:1]
// Credentials for the registry come from KILN_REGISTRIES (same JSON as the workers and the agent).
// Prints {"ref", "manifestDigest", "indexDigest", "uploadedBytes"} as JSON.
import { parseRegistryConfig } from "@kiln/oci";
import { BASE_IMAGE_NAME, publishBaseImage } from "@kiln/testkit";

const [registry, name = BASE_IMAGE_NAME] = process.argv.slice(2);
if (!registry) {
  process.stderr.write("usage: publish-base-image <registry host:port> [repository:tag]\n");
  process.exit(2);
}
try {
  const result = await publishBaseImage({ registry, name, config: parseRegistryConfig(process.env.KILN_REGISTRIES) });
  process.stdout.write(`${JSON.stringify(result)}\n`);
} catch (err) {
  const e = err as Error & { code?: string };
  process.stderr.write(`publish-base-image failed${e.code ? ` (${e.code})` : ""}: ${e.message}\n`);
  process.exit(1);
}
