// A job image's root filesystem as an ext4 file, built once per image digest from the directory the
// image helper unpacked (`mkfs.ext4 -d`, no mount) and shared read-only by every VM that uses it.
import { randomBytes } from "node:crypto";
import { mkdir, rename, rm, stat } from "node:fs/promises";
import path from "node:path";
import { buildExt4 } from "./microvm-assets.ts";
import { MicrovmError } from "./microvm-errors.ts";

const DIGEST = /^sha256:[a-f0-9]{64}$/;

export class RootfsCache {
  private building = new Map<string, Promise<string>>();

  constructor(
    private readonly dir: string,
    private readonly mkfsPath: string,
  ) {}

  /** Path of the ext4 for `digest`, building it from `sourceDir` when missing. */
  ensure(sourceDir: string, digest: string): Promise<string> {
    if (!DIGEST.test(digest))
      return Promise.reject(
        new MicrovmError("MICROVM.BAD_INPUT", `rootfs digest ${JSON.stringify(digest)} is not sha256:<64 hex>`),
      );
    const out = path.join(this.dir, `${digest.slice("sha256:".length)}.ext4`);
    let pending = this.building.get(out);
    if (!pending) {
      pending = this.build(sourceDir, out).finally(() => this.building.delete(out));
      this.building.set(out, pending);
    }
    return pending;
  }

  private async build(sourceDir: string, out: string): Promise<string> {
    if (
      await stat(out).then(
        () => true,
        () => false,
      )
    )
      return out;
    const source = await stat(sourceDir).catch(() => null);
    if (!source?.isDirectory())
      throw new MicrovmError("MICROVM.BAD_INPUT", `rootfs directory ${sourceDir} does not exist`);
    await mkdir(this.dir, { recursive: true });
    const tmp = `${out}.${randomBytes(4).toString("hex")}.tmp`;
    try {
      await buildExt4(this.mkfsPath, sourceDir, tmp);
      await rename(tmp, out);
    } catch (err) {
      throw new MicrovmError(
        "MICROVM.ASSET_BUILD_FAILED",
        `rootfs image for ${path.basename(out)}: ${err instanceof Error ? err.message : String(err)}`,
      );
    } finally {
      await rm(tmp, { force: true });
    }
    return out;
  }
}
