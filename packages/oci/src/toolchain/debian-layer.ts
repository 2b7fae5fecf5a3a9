// One Debian root filesystem as one reproducible tar (docs/adr/0040), made by mmdebstrap from
// Debian's archive. mmdebstrap already writes a sorted tar with numeric owners and every mtime
// clamped to SOURCE_DATE_EPOCH; the hooks here remove what still differs between two runs (logs,
// apt's lists and caches, ld.so's aux cache, Python byte code whose marshalling is not stable) and
// record the installed package versions beside the tar.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile } from "node:fs/promises";
import { DEBIAN } from "./image-spec.ts";

const MMDEBSTRAP = "/usr/bin/mmdebstrap";

/** Removed from every root before it is packed: non-deterministic, or useless in a job sandbox. */
const STRIP = [
  "var/log/*",
  "var/cache/apt/*",
  "var/lib/apt/lists/*",
  "var/cache/debconf/*-old",
  "var/lib/dpkg/*-old",
  "var/cache/ldconfig/aux-cache",
  "etc/machine-id",
  "var/lib/dbus/machine-id",
];

/** Installed packages as `name=version`, sorted (extract installs none through dpkg: ask apt's lists for the included ones). */
const LIST_INSTALLED = 'dpkg-query --admindir="$1/var/lib/dpkg" -W -f "\\${Package}=\\${Version}\\n"';
const LIST_EXTRACTED =
  'shift; APT_CONFIG="$MMDEBSTRAP_APT_CONFIG" apt-cache show --no-all-versions "$@" | sed -n "s/^Package: //p;s/^Version: //p" | paste -d= - -';

export interface DebianLayerInput {
  variant: "minbase" | "apt" | "extract";
  packages: string[];
  /** Seconds since the epoch: every mtime in the tar is clamped to it. */
  epoch: number;
}

export class MissingToolError extends Error {}

/** Fails with the command that installs mmdebstrap (scripts/ensure-system-packages.sh installs it too). */
export function assertMmdebstrap(): void {
  if (!existsSync(MMDEBSTRAP))
    throw new MissingToolError(
      "mmdebstrap is not installed: apt-get install -y --no-install-recommends mmdebstrap (or run sh scripts/ensure-system-packages.sh)",
    );
}

/**
 * Writes the root filesystem to `outTar` and returns the installed packages (`name=version`, sorted).
 * `aptCacheDir` keeps downloaded .debs between builds (the download is most of a cold build).
 */
export async function buildDebianLayer(
  input: DebianLayerInput,
  outTar: string,
  opts: { aptCacheDir: string; workDir: string; onProgress?: (line: string) => void },
): Promise<string[]> {
  assertMmdebstrap();
  await mkdir(opts.aptCacheDir, { recursive: true });
  await mkdir(opts.workDir, { recursive: true });
  const packagesOut = `${opts.workDir}/packages.txt`;
  const strip = STRIP.map((p) => `"$1"/${p}`).join(" ");
  // The extract variant runs no customize hooks (nothing is installed): its hooks go after extraction.
  const hook = input.variant === "extract" ? "--extract-hook" : "--customize-hook";
  const args = [
    `SOURCE_DATE_EPOCH=${input.epoch}`,
    `KILN_PACKAGES_OUT=${packagesOut}`,
    `TMPDIR=${opts.workDir}`,
    MMDEBSTRAP,
    "--mode=root",
    `--variant=${input.variant}`,
    "--format=tar",
    "--skip=download/empty",
    "--aptopt=Acquire::Retries 3",
    ...(input.packages.length ? [`--include=${input.packages.join(",")}`] : []),
    '--setup-hook=mkdir -p "$1"/var/cache/apt/archives/',
    `--setup-hook=sync-in ${opts.aptCacheDir} /var/cache/apt/archives/`,
    `${hook}=sync-out /var/cache/apt/archives ${opts.aptCacheDir}`,
    `${hook}=set -- "$1" ${input.packages.join(" ")}; { ${input.variant === "extract" ? LIST_EXTRACTED : LIST_INSTALLED}; } | LC_ALL=C sort > "$KILN_PACKAGES_OUT"`,
    `${hook}=rm -rf ${strip}; find "$1"/usr "$1"/etc -xdev -depth -type d -name __pycache__ -exec rm -rf {} +`,
    DEBIAN.suite,
    outTar,
    DEBIAN.mirror,
  ];
  await run("env", args, opts.onProgress);
  const text = await readFile(packagesOut, "utf8");
  return text.split("\n").filter(Boolean);
}

/** Runs a command, passing each stderr line to onProgress; rejects with the last lines on failure. */
export function run(cmd: string, args: string[], onProgress?: (line: string) => void): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const tail: string[] = [];
    let partial = "";
    child.stdout.on("data", (b: Buffer) => out.push(b));
    child.stderr.on("data", (b: Buffer) => {
      const lines = (partial + b.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const l of lines) {
        tail.push(l);
        if (tail.length > 20) tail.shift();
        onProgress?.(l);
      }
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve(Buffer.concat(out).toString("utf8"));
      else reject(new Error(`${args.find((a) => a.startsWith("/")) ?? cmd} exited ${code}:\n${tail.join("\n")}`));
    });
  });
}
