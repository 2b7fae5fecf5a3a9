import { mkdtemp, readdir, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ApiResult, LogAppendResponse, LogSealRequest, LogSealResponse } from "../control-client.ts";
import { createLogger } from "@kiln/logger";
import { LogShipper, type LogShipperConfig, type LogTransport, type WireChunk } from "./log-shipper.ts";

// The shipper's ordering and retry rules against a scripted control plane. The real ingest
// (PostgreSQL durability, epochs) is covered by packages/engine/test/logs and e2e/logs*.test.ts.
class ScriptedIngest implements LogTransport {
  stored: { seq: number; stream: string; offset: number; data: string }[] = [];
  requests: number[][] = [];
  sealed: LogSealRequest | null = null;
  /** Per call: answer normally, or fail before/after storing. */
  script: ("ok" | "drop-request" | "drop-response" | "busy" | "fenced")[] = [];

  async append(body: { epoch: number; chunks: WireChunk[] }): Promise<ApiResult<LogAppendResponse>> {
    this.requests.push(body.chunks.map((c) => c.identity.seq));
    const step = this.script.shift() ?? "ok";
    if (step === "drop-request") return { ok: false, kind: "network", message: "connection reset" };
    if (step === "busy") return { ok: false, kind: "http", status: 503, code: "LOG.JOURNAL_FULL", message: "full" };
    if (step === "fenced")
      return { ok: false, kind: "http", status: 409, code: "ATTEMPT.STALE_EPOCH", message: "stale" };
    for (const { identity: c, data } of body.chunks) {
      const next = this.stored.length;
      if (c.seq < next) continue; // duplicate
      if (c.seq !== next) throw new Error(`hole: got ${c.seq}, expected ${next}`);
      this.stored.push({ seq: c.seq, stream: c.stream, offset: c.offset, data: data.toString() });
    }
    if (step === "drop-response") return { ok: false, kind: "network", message: "timeout" };
    return {
      ok: true,
      status: 200,
      data: { committed: { stdout: 0, stderr: 0 }, next_seq: this.stored.length, stored: 0, duplicates: 0 },
    };
  }

  async seal(body: LogSealRequest): Promise<ApiResult<LogSealResponse>> {
    this.sealed = body;
    return {
      ok: true,
      status: 200,
      data: { state: body.dropped_bytes.stdout + body.dropped_bytes.stderr > 0 ? "truncated" : "sealed" },
    };
  }

  text(stream: string): string {
    return this.stored
      .filter((c) => c.stream === stream)
      .map((c) => c.data)
      .join("");
  }
}

let dir = "";
beforeEach(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), "kiln-shipper-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const quiet = createLogger({}, () => undefined);
const config = (over: Partial<LogShipperConfig> = {}): LogShipperConfig => ({
  flushMs: 20,
  flushBytes: 16,
  maxBytes: 1 << 20,
  rateBytesPerSec: 1 << 30,
  memoryBytes: 1 << 20,
  spoolDir: dir,
  ...over,
});
const attempt = { attemptId: "att-1", epoch: 1, env: { DEPLOY_TOKEN: "tok-abcdef-123" } };

describe("LogShipper", () => {
  it("retries unacknowledged chunks in order until acknowledged, then seals and removes its spool", async () => {
    const ingest = new ScriptedIngest();
    ingest.script = ["drop-request", "drop-response", "busy", "ok"];
    const s = new LogShipper(config(), attempt, ingest, quiet);
    s.stdout(Buffer.from("line one of the build\n"));
    s.stderr(Buffer.from("a warning\n"));
    s.stdout(Buffer.from("line two\n"));
    s.endStep();
    expect(await s.finish(10_000)).toBe("sealed");
    expect(ingest.text("stdout")).toBe("line one of the build\nline two\n");
    expect(ingest.text("stderr")).toBe("a warning\n");
    expect(ingest.sealed).toMatchObject({
      next_seq: ingest.stored.length,
      bytes: { stdout: 31, stderr: 10 },
      dropped_bytes: { stdout: 0, stderr: 0 },
    });
    // Every request starts at the oldest unacknowledged chunk.
    for (const r of ingest.requests) expect(r[0]).toBeLessThanOrEqual(ingest.stored.length);
    expect(await readdir(dir)).toEqual([]);
  });

  it("masks the job's secrets before anything leaves the host, across writes", async () => {
    const ingest = new ScriptedIngest();
    const s = new LogShipper(config({ flushBytes: 5 }), attempt, ingest, quiet);
    s.stdout(Buffer.from("using tok-ab"));
    s.stdout(Buffer.from("cdef-123 to deploy\n"));
    expect(await s.finish(5_000)).toBe("sealed");
    expect(ingest.text("stdout")).toBe("using *** to deploy\n");
  });

  it("past the limit keeps draining, ships the kept part and seals as truncated with the dropped count", async () => {
    const ingest = new ScriptedIngest();
    const s = new LogShipper(config({ maxBytes: 100, flushBytes: 32 }), attempt, ingest, quiet);
    for (let i = 0; i < 1000; i++) s.stdout(Buffer.alloc(1000, 0x41));
    expect(await s.finish(5_000)).toBe("truncated");
    expect(ingest.text("stdout")).toBe("A".repeat(100));
    expect(ingest.sealed?.dropped_bytes).toEqual({ stdout: 1_000_000 - 100, stderr: 0 });
  });

  it("spills past its memory budget to the disk spool and still ships every byte", async () => {
    const ingest = new ScriptedIngest();
    ingest.script = Array.from({ length: 5 }, () => "drop-request" as const);
    const s = new LogShipper(config({ memoryBytes: 64, flushBytes: 50 }), attempt, ingest, quiet);
    const expected: string[] = [];
    for (let i = 0; i < 200; i++) {
      const line = `line ${i} ${"x".repeat(i % 37)}\n`;
      expected.push(line);
      s.stdout(Buffer.from(line));
    }
    expect(await s.finish(20_000)).toBe("sealed");
    expect(ingest.text("stdout")).toBe(expected.join(""));
  });

  it("stops at once when the attempt is fenced and does not seal", async () => {
    const ingest = new ScriptedIngest();
    ingest.script = ["fenced"];
    const s = new LogShipper(config(), attempt, ingest, quiet);
    s.stdout(Buffer.from("some output that will not be accepted\n"));
    expect(await s.finish(5_000)).toBe("unsealed");
    expect(ingest.sealed).toBeNull();
  });

  it("gives up at the drain deadline when the control plane never answers", async () => {
    const ingest = new ScriptedIngest();
    ingest.script = Array.from({ length: 1000 }, () => "drop-request" as const);
    const s = new LogShipper(config(), attempt, ingest, quiet);
    s.stdout(Buffer.from("unlucky\n"));
    const started = Date.now();
    expect(await s.finish(500)).toBe("unsealed");
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
