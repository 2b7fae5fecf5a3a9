// `tlog monitor`: what a witness does for Kiln's transparency log (docs/adr/0026), over HTTP only:
// fetch the latest checkpoint, check its signature with the pinned verifier key, check that it
// extends the last checkpoint this state file saw (RFC 6962 consistency proof, roots taken from the
// two signed checkpoints, never from the server's proof answer), then remember it. A log that
// rewrote or forked its history cannot pass; the exit status names the rule that failed.
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";
import { tlog } from "@kiln/domain";
import { openCheckpoint, tlogHasher } from "@kiln/engine";
import { opt, type CliCommand, UsageError } from "./command.ts";

interface MonitorState {
  url: string;
  verifier_key: string;
  size: string;
  root_hash: string;
  checkpoint: string;
  checked_at: string;
}

type MonitorRule =
  | "TLOG.UNREACHABLE"
  | "TLOG.BAD_VERIFIER_KEY"
  | "TLOG.CHECKPOINT_SIGNATURE"
  | "TLOG.CHECKPOINT_MALFORMED"
  | "TLOG.CHECKPOINT_ORIGIN"
  | "TLOG.SIZE_DECREASED"
  | "TLOG.FORK"
  | "TLOG.CONSISTENCY";

class MonitorFailure extends Error {
  constructor(
    readonly rule: MonitorRule,
    message: string,
  ) {
    super(message);
  }
}

async function fetchText(url: string): Promise<string> {
  let r: Response;
  try {
    r = await fetch(url, { signal: AbortSignal.timeout(15_000) });
  } catch (e) {
    throw new MonitorFailure("TLOG.UNREACHABLE", `GET ${url}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const body = await r.text();
  if (!r.ok) throw new MonitorFailure("TLOG.UNREACHABLE", `GET ${url}: ${r.status} ${body.slice(0, 200)}`);
  return body;
}

function readState(file: string): MonitorState | null {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as MonitorState;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw new UsageError(`--state ${file} is not a monitor state file: ${e instanceof Error ? e.message : String(e)}`);
  }
}

function defaultUrl(): string | undefined {
  const dataDir = path.resolve(process.env.KILN_DATA_DIR ?? ".kiln-data");
  try {
    const port = (JSON.parse(readFileSync(path.join(dataDir, "instance.json"), "utf8")) as { port?: number }).port;
    if (port) return `http://127.0.0.1:${port}`;
  } catch {
    // no local instance: --url or the state file must say
  }
  return process.env.KILN_PUBLIC_URL;
}

/** One monitoring pass; throws MonitorFailure naming the rule, returns the new state. */
async function monitor(url: string, prev: MonitorState | null, pinnedKey: string | undefined) {
  const base = url.replace(/\/+$/, "");
  if (prev && pinnedKey && pinnedKey.trim() !== prev.verifier_key)
    throw new UsageError("--key differs from the key this state file pinned; use a new state file for another log");
  // Trust on first use unless --key pins one: the key is remembered and never re-read from the server.
  const key =
    prev?.verifier_key ??
    pinnedKey ??
    (JSON.parse(await fetchText(`${base}/v1/tlog/verifier-key`)) as { verifier_key: string }).verifier_key;
  const note = await fetchText(`${base}/tlog/checkpoint`);
  const opened = openCheckpoint(note, key);
  if (!opened.ok) throw new MonitorFailure(opened.rule, opened.reason);
  const { size, rootHash } = opened.checkpoint;
  if (prev) {
    const oldSize = BigInt(prev.size);
    const oldRoot = tlog.fromBase64(prev.root_hash) ?? new Uint8Array();
    if (size < oldSize)
      throw new MonitorFailure("TLOG.SIZE_DECREASED", `size ${size} is below the ${oldSize} seen before`);
    if (size === oldSize && !tlog.bytesEqual(rootHash, oldRoot))
      throw new MonitorFailure("TLOG.FORK", `two checkpoints of size ${size} with different roots`);
    if (size > oldSize && oldSize > 0n) {
      const answer = JSON.parse(await fetchText(`${base}/v1/tlog/proofs/consistency?from=${oldSize}&to=${size}`)) as {
        hashes?: unknown;
      };
      const hashes = Array.isArray(answer.hashes) ? answer.hashes.map((h) => tlog.fromBase64(String(h))) : [null];
      const proof = hashes.filter((h): h is Uint8Array => h !== null);
      const check =
        proof.length === hashes.length
          ? tlog.verifyConsistency(tlogHasher, oldSize, size, proof, oldRoot, rootHash)
          : { ok: false as const, reason: "the proof is not a list of base64 hashes" };
      if (!check.ok)
        throw new MonitorFailure(
          "TLOG.CONSISTENCY",
          `checkpoint ${size} does not extend checkpoint ${oldSize}: ${check.reason}`,
        );
    }
  }
  const state: MonitorState = {
    url: base,
    verifier_key: key,
    size: size.toString(),
    root_hash: tlog.toBase64(rootHash),
    checkpoint: note,
    checked_at: new Date().toISOString(),
  };
  return { state, grew: prev ? size - BigInt(prev.size) : size, witnesses: opened.note.unknownSignatures };
}

export const tlogCommands: CliCommand[] = [
  {
    name: "tlog monitor",
    usage:
      "tlog monitor --state <file> [--url <base>] [--key <verifier key>]\n" +
      "      checks the latest checkpoint's signature and that it extends the last one seen; non-zero exit names the rule",
    options: { state: { type: "string" }, url: { type: "string" }, key: { type: "string" } },
    offline: true,
    async run(ctx) {
      const file = opt(ctx.values, "state");
      if (!file) throw new UsageError("--state <file> is required");
      const prev = readState(file);
      const url = opt(ctx.values, "url") ?? prev?.url ?? defaultUrl();
      if (!url) throw new UsageError("--url <base> is required (no state file and no local instance)");
      try {
        const r = await monitor(url, prev, opt(ctx.values, "key"));
        const tmp = `${file}.tmp`;
        writeFileSync(tmp, `${JSON.stringify(r.state, null, 2)}\n`, { mode: 0o600 });
        renameSync(tmp, file);
        ctx.out(
          `ok: ${url} checkpoint ${r.state.size} (${prev ? `+${r.grew} since the last check` : "first seen; key pinned"})`,
          {
            ok: true,
            size: r.state.size,
            root_hash: r.state.root_hash,
            grew: r.grew.toString(),
            unknown_signatures: r.witnesses,
          },
        );
        return 0;
      } catch (e) {
        if (!(e instanceof MonitorFailure)) throw e;
        ctx.out(`FAILED ${e.rule}: ${e.message}`, { ok: false, rule: e.rule, message: e.message });
        return 1;
      }
    },
  },
];
