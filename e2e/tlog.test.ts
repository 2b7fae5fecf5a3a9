import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http, { type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { sqlPool, withTx } from "@kiln/db";
import { tlog } from "@kiln/domain";
import { appendTlogEntry, loadKeyEncryptionKey, logSigner } from "@kiln/engine";
import { cloneDatabase, dropDatabase, startPlatform, uniqueDatabaseName, type Platform } from "@kiln/testkit";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TestBrowser } from "./support/browser.ts";

// Issue 17, black box against `next start` and the real workers: the transparency log's public
// endpoints, a new checkpoint within 5 s of new entries, and Go's golang.org/x/mod/sumdb/note and
// sumdb/tlog (Debian's golang-golang-x-mod-dev, GOPATH mode, no network) accepting every served
// checkpoint, proof and tile and rejecting each with one bit flipped. The public page in Chromium.
const dbName = uniqueDatabaseName("e2e_tlog");
let platform: Platform;
let base = "";
let browser: TestBrowser;
const work = mkdtempSync(path.join(tmpdir(), "kiln-tlog-go-"));
const enc = new TextEncoder();

beforeAll(async () => {
  const url = await cloneDatabase(inject("pgServerUrl"), inject("pgTemplate"), dbName);
  platform = await startPlatform({ databaseUrl: url, redis: true, s3: false, developmentPool: null });
  await platform.startWeb("web", { healthTimeoutMs: 90_000 });
  base = platform.baseUrl();
  browser = await TestBrowser.launch();
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await platform?.stop();
  await dropDatabase(inject("pgServerUrl"), dbName).catch(() => undefined);
  rmSync(work, { recursive: true, force: true });
});

async function get(p: string): Promise<{ status: number; type: string | null; bytes: Buffer; json: any }> {
  const r = await fetch(`${base}${p}`);
  const bytes = Buffer.from(await r.arrayBuffer());
  let json: any;
  try {
    json = JSON.parse(bytes.toString("utf8"));
  } catch {
    json = null;
  }
  return { status: r.status, type: r.headers.get("content-type"), bytes, json };
}

async function appendEntries(from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++)
    await withTx(platform.db, "e2e-append", (tx) =>
      appendTlogEntry(tx, { kind: "test", bytes: enc.encode(`{"entry":${i}}`), dedupeKey: `e2e-${i}` }),
    );
}

async function waitForCheckpoint(size: number, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const r = await get("/tlog/checkpoint");
    if (r.status === 200 && r.bytes.toString().split("\n")[1] === String(size)) return r.bytes.toString();
    if (Date.now() > deadline)
      throw new Error(`no checkpoint of size ${size}: ${r.status} ${r.bytes}\n${platform.logs()}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

describe("transparency log over HTTP", { timeout: 300_000 }, () => {
  it("before the workers run: 503s with codes, and the public page's empty state; then it goes live", async () => {
    const cp = await get("/tlog/checkpoint");
    expect([cp.status, cp.json?.error?.code]).toEqual([503, "TLOG.NO_CHECKPOINT"]);
    const vk = await get("/v1/tlog/verifier-key");
    expect([vk.status, vk.json?.error?.code]).toEqual([503, "TLOG.KEY_UNAVAILABLE"]);
    const page = await browser.page();
    await page.goto(`${base}/transparency-log`);
    await page.getByText("No checkpoint signed yet").waitFor();
    platform.startWorkers();
    // Live: the page polls and shows the first (empty) checkpoint without a reload.
    await page.getByTestId("tlog-status").waitFor({ timeout: 30_000 });
    expect(await page.getByTestId("tlog-size").textContent()).toBe("0");
    await page.close();
  });

  it("signs a checkpoint within 5 s of new entries, origin from the default, sizes growing", async () => {
    await waitForCheckpoint(0, 30_000);
    await appendEntries(0, 5);
    const t0 = Date.now();
    const first = await waitForCheckpoint(5, 5_000);
    const firstLatency = Date.now() - t0;
    await appendEntries(5, 305);
    const t1 = Date.now();
    const note = await waitForCheckpoint(305, 5_000);
    console.log(`entry -> checkpoint: ${firstLatency} ms (5 entries), ${Date.now() - t1} ms (300 entries)`);
    expect(note.startsWith("localhost/tlog\n305\n")).toBe(true);
    writeFileSync(path.join(work, "old-checkpoint"), first);
    const vk = await get("/v1/tlog/verifier-key");
    expect(vk.status).toBe(200);
    expect(vk.json).toMatchObject({ origin: "localhost/tlog", algorithm: "ed25519" });
    expect(vk.json.verifier_key).toMatch(/^localhost\/tlog\+[0-9a-f]{8}\+[A-Za-z0-9+/]{44}$/);
  });

  it("the web server and the workers run as the database roles without DDL (issue 28)", async () => {
    const r = await sqlPool(platform.db).query<{ app: string; usr: string }>(
      `SELECT DISTINCT application_name AS app, usename AS usr FROM pg_stat_activity
        WHERE datname = current_database() AND application_name IN ('web', 'workers') ORDER BY 1`,
    );
    // The web role only reads the log (packages/db/test/app-roles.test.ts attacks it directly).
    expect(r.rows).toEqual([
      { app: "web", usr: "kiln_web_login" },
      { app: "workers", usr: "kiln_workers_login" },
    ]);
  });

  it("serves exactly the leaf bytes, entry bundles with uint16 framing, and hash tiles", async () => {
    const e = await get("/v1/tlog/entries/7");
    expect([e.status, e.type, e.bytes.toString()]).toEqual([200, "application/octet-stream", '{"entry":7}']);
    const bundle = await get("/tlog/tile/entries/000");
    const entries = tlog.decodeEntryBundle(new Uint8Array(bundle.bytes));
    expect(entries?.length).toBe(256);
    expect(Buffer.from(entries![255]!).toString()).toBe('{"entry":255}');
    const partial = await get("/tlog/tile/entries/001.p/49");
    expect(tlog.decodeEntryBundle(new Uint8Array(partial.bytes))?.length).toBe(49);
    expect((await get("/tlog/tile/0/001.p/49")).bytes.length).toBe(49 * 32);
    expect((await get("/tlog/tile/1/000.p/1")).bytes.length).toBe(32);
  });

  it("answers bad requests with 4xx, a code and a message, never a 500", async () => {
    const cases: [string, number, string][] = [
      ["/v1/tlog/entries/305", 404, "TLOG.ENTRY_NOT_FOUND"],
      ["/v1/tlog/entries/-1", 400, "REQUEST.INVALID"],
      ["/v1/tlog/entries/1e3", 400, "REQUEST.INVALID"],
      ["/v1/tlog/entries/99999999999999999999", 400, "REQUEST.INVALID"],
      ["/v1/tlog/proofs/inclusion?index=0&size=306", 400, "TLOG.SIZE_BEYOND_LOG"],
      ["/v1/tlog/proofs/inclusion?index=305&size=305", 400, "TLOG.INDEX_OUT_OF_RANGE"],
      ["/v1/tlog/proofs/inclusion?size=3", 400, "REQUEST.INVALID"],
      ["/v1/tlog/proofs/inclusion?index=0x1&size=3", 400, "REQUEST.INVALID"],
      ["/v1/tlog/proofs/consistency?from=0&to=3", 400, "TLOG.INDEX_OUT_OF_RANGE"],
      ["/v1/tlog/proofs/consistency?from=4&to=3", 400, "TLOG.INDEX_OUT_OF_RANGE"],
      ["/v1/tlog/proofs/consistency?from=1", 400, "REQUEST.INVALID"],
      ["/tlog/tile/0/002", 404, "TLOG.TILE_NOT_FOUND"],
      ["/tlog/tile/0/001.p/50", 404, "TLOG.TILE_NOT_FOUND"],
      ["/tlog/tile/0/1", 404, "TLOG.TILE_NOT_FOUND"],
      ["/tlog/tile/0/000.p/256", 404, "TLOG.TILE_NOT_FOUND"],
      ["/tlog/tile/9/000", 404, "TLOG.TILE_NOT_FOUND"],
    ];
    for (const [p, status, code] of cases) {
      const r = await get(p);
      expect([p, r.status, r.json?.error?.code, typeof r.json?.error?.message]).toEqual([p, status, code, "string"]);
    }
  });

  it("Go's sumdb/note and sumdb/tlog accept every checkpoint, proof and tile, and reject each with a bit flipped", () => {
    const env = {
      ...process.env,
      GOPATH: `${path.join(work, "gopath")}:/usr/share/gocode`,
      GO111MODULE: "off",
      GOFLAGS: "",
      GOPROXY: "off",
      // The build cache must be writable wherever the suite runs (CI's HOME may not be).
      GOCACHE: path.join(work, "gocache"),
    };
    const src = path.resolve(import.meta.dirname, "support/tlog-go-harness/main.go");
    const build = spawnSync("go", ["build", "-o", path.join(work, "harness"), src], { env, encoding: "utf8" });
    expect(build.status, build.stderr).toBe(0);
    const run = spawnSync(path.join(work, "harness"), [base, path.join(work, "old-checkpoint")], {
      env,
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
    });
    const checks = run.stdout
      .trim()
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { check: string; want_ok: boolean; ok: boolean; err: string });
    const wrong = checks.filter((c) => c.ok !== c.want_ok);
    expect(wrong, run.stderr).toEqual([]);
    expect(run.status, run.stderr).toBe(0);
    const count = (prefix: string, wantOk: boolean) =>
      checks.filter((c) => c.check.startsWith(prefix) && c.want_ok === wantOk && c.ok === wantOk).length;
    expect(count("CheckRecord", true)).toBe(305);
    expect(count("CheckRecord", false)).toBe(305 * 2);
    expect(count("CheckTree", true)).toBe(305);
    expect(count("CheckTree", false)).toBe(304);
    expect(count("note.Open", true)).toBe(2);
    expect(count("note.Open", false)).toBe(2);
    expect(count("ProveRecord", true)).toBe(3);
    expect(count("TreeHash from tiles", true)).toBe(1);
    expect(count("TreeHash from tiles with a bit flipped", false)).toBe(1);
    expect(count("earlier checkpoint root matches tiles", true)).toBe(1);
  });

  it("the public page shows size, root, time and verifier key, and copies the key from the keyboard", async () => {
    const page = await browser.page();
    await page.goto(`${base}/transparency-log`);
    await page.getByTestId("tlog-status").waitFor();
    expect(await page.getByTestId("tlog-size").textContent()).toBe("305");
    const note = (await get("/tlog/checkpoint")).bytes.toString();
    expect(await page.getByTestId("tlog-root").textContent()).toBe(note.split("\n")[2]);
    const vk = (await get("/v1/tlog/verifier-key")).json.verifier_key;
    expect(await page.getByTestId("tlog-verifier-key").textContent()).toBe(vk);
    const signedAt = await page.locator("[data-testid='tlog-status'] time").first().getAttribute("datetime");
    expect(Math.abs(Date.now() - Date.parse(signedAt ?? ""))).toBeLessThan(5 * 60_000);
    // Keyboard: Tab reaches the copy button, Enter copies the key.
    await browser.browserContext.grantPermissions(["clipboard-read", "clipboard-write"], { origin: base });
    const copy = page.getByRole("button", { name: "Copy" });
    for (let i = 0; i < 10 && !(await copy.evaluate((el) => el === document.activeElement)); i++)
      await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Copied" }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(vk);
    await page.close();
  });
});

// The monitor (what a witness does) against the real log, then against a hostile log server that
// holds the real signing key (a compromised operator): it serves a forged signature, a fork at the
// same size, a rewritten history at a larger size, and an older checkpoint. Each must fail with its
// rule named, and the state file must keep the last good checkpoint.
describe("kiln tlog monitor", { timeout: 300_000 }, () => {
  const ROOT = path.resolve(import.meta.dirname, "..");
  const state = path.join(work, "monitor-state.json");
  let hostile: Server;
  let hostileBase = "";
  let serveCheckpoint: (() => string) | null = null;

  beforeAll(async () => {
    hostile = http.createServer((req, res) => {
      void (async () => {
        if (req.url === "/tlog/checkpoint" && serveCheckpoint) {
          res.writeHead(200, { "content-type": "text/plain" }).end(serveCheckpoint());
          return;
        }
        const r = await fetch(`${base}${req.url}`);
        res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "application/octet-stream" });
        res.end(Buffer.from(await r.arrayBuffer()));
      })();
    });
    await new Promise<void>((r) => hostile.listen(0, "127.0.0.1", () => r()));
    hostileBase = `http://127.0.0.1:${(hostile.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => hostile.close(() => r())));

  // Spawned asynchronously: the hostile server runs in this process and must keep answering.
  function monitor(url: string): Promise<{ status: number | null; out: any }> {
    return new Promise((resolve, reject) => {
      const child = spawn(
        process.execPath,
        ["--import", "tsx", "scripts/kiln.ts", "tlog", "monitor", "--state", state, "--url", url, "--json"],
        { cwd: ROOT, env: { ...process.env } },
      );
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
      child.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
      child.on("error", reject);
      child.on("close", (status) => {
        let out: any;
        try {
          out = JSON.parse(stdout.trim().split("\n").pop() ?? "");
        } catch {
          out = { raw: stdout, err: stderr };
        }
        resolve({ status, out });
      });
    });
  }

  /** A checkpoint signed with the log's real key (the hostile operator has it) for any size and root. */
  async function forged(size: number, root: Uint8Array): Promise<string> {
    const kek = loadKeyEncryptionKey({ file: path.join(platform.dataDir, "data/keys/tlog-kek") });
    const signer = await logSigner(platform.db, { origin: "localhost/tlog", kek });
    const body = tlog.formatCheckpoint({ origin: signer.origin, size, rootHash: root });
    return tlog.formatSignedNote(body, [
      { name: signer.origin, keyHash: signer.keyHash, signature: signer.sign(enc.encode(body)) },
    ]);
  }

  const remembered = () => JSON.parse(readFileSync(state, "utf8")).size as string;

  it("pins the key on first use, then follows the log as it grows", async () => {
    const first = await monitor(base);
    expect([first.status, first.out]).toMatchObject([0, { ok: true, size: "305" }]);
    await appendEntries(305, 315);
    await waitForCheckpoint(315, 5_000);
    const next = await monitor(base);
    expect([next.status, next.out]).toMatchObject([0, { ok: true, size: "315", grew: "10" }]);
  });

  it("names the rule when the log forges, forks, rewrites or rolls back, and keeps the last good state", async () => {
    const real = (await get("/tlog/checkpoint")).bytes.toString();
    const sigAt = real.lastIndexOf(" ") + 10;
    serveCheckpoint = () => real.slice(0, sigAt) + (real[sigAt] === "A" ? "B" : "A") + real.slice(sigAt + 1);
    expect(await monitor(hostileBase)).toMatchObject({
      status: 1,
      out: { ok: false, rule: "TLOG.CHECKPOINT_SIGNATURE" },
    });

    const fork = await forged(315, new Uint8Array(randomBytes(32)));
    serveCheckpoint = () => fork;
    expect(await monitor(hostileBase)).toMatchObject({ status: 1, out: { ok: false, rule: "TLOG.FORK" } });

    await appendEntries(315, 320);
    await waitForCheckpoint(320, 5_000);
    const rewritten = await forged(320, new Uint8Array(randomBytes(32)));
    serveCheckpoint = () => rewritten;
    expect(await monitor(hostileBase)).toMatchObject({ status: 1, out: { ok: false, rule: "TLOG.CONSISTENCY" } });

    const older = await forged(300, new Uint8Array(randomBytes(32)));
    serveCheckpoint = () => older;
    expect(await monitor(hostileBase)).toMatchObject({ status: 1, out: { ok: false, rule: "TLOG.SIZE_DECREASED" } });
    expect(remembered()).toBe("315");

    serveCheckpoint = null;
    expect(await monitor(hostileBase)).toMatchObject({ status: 0, out: { ok: true, size: "320", grew: "5" } });
    expect(remembered()).toBe("320");
  });
});
