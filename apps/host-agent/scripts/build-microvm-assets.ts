// Builds (or finds, when already cached) the microvm driver's guest assets: kernel, initramfs and
// base rootfs, from Debian packages only. The driver does the same on startup when they are
// missing; this script is for preparing a host ahead of time and for inspecting the result.
// Usage: tsx apps/host-agent/scripts/build-microvm-assets.ts [cache dir]
//        (default: .kiln-data/microvm-assets, the agent's default KILN_MICROVM_ASSETS)
import path from "node:path";
import { ensureMicrovmAssets } from "../src/sandboxes/microvm/microvm-assets.ts";

const dir = path.resolve(process.argv[2] ?? ".kiln-data/microvm-assets");
const started = performance.now();
try {
  const assets = await ensureMicrovmAssets(dir);
  process.stdout.write(`${JSON.stringify({ ...assets, ms: Math.round(performance.now() - started) }, null, 2)}\n`);
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
