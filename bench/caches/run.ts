// Build cache restore benchmark (issue 8). One archive, the same bytes, the same disk, one run:
//   tar      = plain `tar -xzf` of the archive file into an empty directory (the baseline);
//   local    = the agent's restoreEntry with the archive in the node-local tier: stream the file,
//              SHA-256 of the compressed bytes, gunzip, strict tar parse, every member checked
//              against the manifest and hashed as written into a staging dir, then renamed into
//              the workspace;
//   remote   = the same from object storage (s3rver in its own process, a presigned GET), teed
//              into the node-local tier as the agent does.
// The dependency tree is --mib MiB of files from 2 KiB to 1 MiB in 64 directories, three quarters
// random bytes and one quarter text, packed by the agent's own packCache (gzip level 1).
// Usage: tsx bench/caches/run.ts [--mib 500] [--rounds 3] [--dir <scratch dir on the disk to test>]
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { GetObjectCommand, PutObjectCommand } from "@aws-sdk/client-s3";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { createObjectStore } from "@kiln/engine";
import { startS3Process } from "@kiln/testkit";
import { createReadStream } from "node:fs";
import { LocalCacheTier, packCache, restoreEntry } from "@kiln/host-agent/caches";
import { createLogger } from "@kiln/logger";
import { median } from "../lib/stats.ts";

const execFileAsync = promisify(execFile);
const arg = (name: string, fallback: string) =>
  process.argv.includes(`--${name}`) ? (process.argv[process.argv.indexOf(`--${name}`) + 1] ?? fallback) : fallback;
const MIB = Number(arg("mib", "500"));
const ROUNDS = Number(arg("rounds", "3"));
const BASE = arg("dir", os.tmpdir());
const progress = (m: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${m}\n`);
const quiet = createLogger({ service: "bench" }, () => {});
const limits = { maxBytes: 2 ** 40, maxEntries: 10_000_000, timeoutMs: 3_600_000 };

async function makeTree(dir: string, bytes: number): Promise<number> {
  const text = Buffer.from(
    "export function leftPad(s, n, c = ' ') { return String(s).padStart(n, c); }\n".repeat(4096),
  );
  let left = bytes;
  let files = 0;
  for (let i = 0; left > 0; i++) {
    const size = Math.min(left, 2048 * 2 ** (i % 10));
    const d = path.join(dir, `pkg${i % 64}`, `lib${i % 7}`);
    await mkdir(d, { recursive: true });
    const rnd = Math.floor((size * 3) / 4);
    await writeFile(path.join(d, `f${i}.js`), Buffer.concat([randomBytes(rnd), text.subarray(0, size - rnd)]));
    left -= size;
    files++;
  }
  return files;
}

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  const root = await mkdtemp(path.join(BASE, "kiln-bench-caches-"));
  const s3h = await startS3Process({ dataDir: path.join(root, "s3") });
  try {
    const src = path.join(root, "src");
    progress(`writing a ${MIB} MiB dependency tree`);
    const files = await makeTree(path.join(src, "deps"), MIB * 1024 * 1024);
    const archive = path.join(root, "cache.tar.gz");
    const packMs = await timed(async () => {
      const p = await packCache(src, ["deps"], archive, { maxBytes: limits.maxBytes, maxEntries: limits.maxEntries });
      if (!p.ok) throw new Error(p.reason);
    });
    const packed = await packCache(src, ["deps"], path.join(root, "again.tar.gz"), {
      maxBytes: limits.maxBytes,
      maxEntries: limits.maxEntries,
    });
    if (!packed.ok) throw new Error(packed.reason);
    await rm(path.join(root, "again.tar.gz"));
    await rm(src, { recursive: true });
    progress(
      `packed ${files} files into ${(packed.sizeBytes / 2 ** 20).toFixed(0)} MiB in ${(packMs / 1000).toFixed(1)} s`,
    );

    const s3 = createObjectStore({
      endpoint: s3h.endpoint,
      region: s3h.region,
      accessKeyId: s3h.accessKeyId,
      secretAccessKey: s3h.secretAccessKey,
    });
    await s3.send(
      new PutObjectCommand({
        Bucket: "kiln",
        Key: "caches/bench.tar.gz",
        Body: createReadStream(archive),
        ContentLength: packed.sizeBytes,
      }),
    );
    const url = await getSignedUrl(s3, new GetObjectCommand({ Bucket: "kiln", Key: "caches/bench.tar.gz" }), {
      expiresIn: 3600,
    });
    const grant = { sha256: packed.sha256, size_bytes: packed.sizeBytes, url };

    const rows: { tar: number; local: number; remote: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      const plain = path.join(root, `plain-${r}`);
      await mkdir(plain);
      const tarMs = await timed(() => execFileAsync("tar", ["-xzf", archive, "-C", plain]));
      await rm(plain, { recursive: true });

      const localTier = new LocalCacheTier(path.join(root, `tier-local-${r}`), 2 ** 40);
      await localTier.init();
      await copyFile(archive, localTier.pathFor(packed.sha256));
      const wsLocal = path.join(root, `sandbox-local-${r}`, "workspace");
      await mkdir(wsLocal, { recursive: true });
      let tier = "";
      const localMs = await timed(async () => {
        const x = await restoreEntry(
          {
            signal: new AbortController().signal,
            workspaceDir: wsLocal,
            scratchDir: path.dirname(wsLocal),
            localTier,
            limits,
            log: quiet,
          },
          ["deps"],
          grant,
        );
        if (!("ok" in x) || !x.ok) throw new Error(`local restore failed: ${JSON.stringify(x)}`);
        tier = x.tier;
      });
      if (tier !== "local") throw new Error(`expected the node-local tier, got ${tier}`);
      await rm(path.dirname(wsLocal), { recursive: true });
      await rm(localTier.dir, { recursive: true });

      const emptyTier = new LocalCacheTier(path.join(root, `tier-remote-${r}`), 2 ** 40);
      await emptyTier.init();
      const wsRemote = path.join(root, `sandbox-remote-${r}`, "workspace");
      await mkdir(wsRemote, { recursive: true });
      const remoteMs = await timed(async () => {
        const x = await restoreEntry(
          {
            signal: new AbortController().signal,
            workspaceDir: wsRemote,
            scratchDir: path.dirname(wsRemote),
            localTier: emptyTier,
            limits,
            log: quiet,
          },
          ["deps"],
          grant,
        );
        if (!("ok" in x) || !x.ok || x.tier !== "remote")
          throw new Error(`remote restore failed: ${JSON.stringify(x)}`);
      });
      await rm(path.dirname(wsRemote), { recursive: true });
      await rm(emptyTier.dir, { recursive: true });
      rows.push({ tar: tarMs, local: localMs, remote: remoteMs });
      progress(
        `round ${r + 1}: tar -xzf ${(tarMs / 1000).toFixed(2)} s, node-local ${(localMs / 1000).toFixed(2)} s, object storage ${(remoteMs / 1000).toFixed(2)} s`,
      );
    }
    s3.destroy();
    const m = {
      tar: median(rows.map((x) => x.tar)),
      local: median(rows.map((x) => x.local)),
      remote: median(rows.map((x) => x.remote)),
    };
    const unpackedMiB = packed.unpackedBytes / 2 ** 20;
    const line = (name: string, v: number) =>
      `| ${name} | ${(v / 1000).toFixed(2)} | ${(unpackedMiB / (v / 1000)).toFixed(0)} | ${(m.tar / v).toFixed(2)} |`;
    console.log(
      `\n${files} files, ${unpackedMiB.toFixed(0)} MiB unpacked, archive ${(packed.sizeBytes / 2 ** 20).toFixed(0)} MiB (gzip 1), pack ${(packMs / 1000).toFixed(1)} s; medians of ${ROUNDS} rounds\n`,
    );
    console.log("| path | seconds | MiB/s unpacked | ratio to tar -xzf |\n| --- | ---: | ---: | ---: |");
    console.log(line("plain tar -xzf (same archive, same disk)", m.tar));
    console.log(line("Kiln restore, node-local tier", m.local));
    console.log(line("Kiln restore, object storage (s3rver, presigned GET)", m.remote));
    console.log(
      `\nper round (tar / local / remote, s): ${rows.map((x) => `${(x.tar / 1000).toFixed(2)}/${(x.local / 1000).toFixed(2)}/${(x.remote / 1000).toFixed(2)}`).join(", ")}`,
    );
    // The machine is shared: a per-round ratio compares runs seconds apart, so it is the steadier figure.
    const perRound = {
      local: median(rows.map((x) => x.tar / x.local)),
      remote: median(rows.map((x) => x.tar / x.remote)),
    };
    console.log(
      `median of per-round ratios: node-local ${perRound.local.toFixed(2)}, object storage ${perRound.remote.toFixed(2)}`,
    );
    await writeFile(
      path.join(import.meta.dirname, "last-run.json"),
      `${JSON.stringify({ at: new Date().toISOString(), mib: MIB, rounds: rows, medians: m, files, archiveBytes: packed.sizeBytes, unpackedBytes: packed.unpackedBytes, packMs }, null, 2)}\n`,
    );
  } finally {
    await s3h.stop();
    await rm(root, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exit(1);
});
