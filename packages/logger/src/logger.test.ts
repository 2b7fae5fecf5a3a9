import { describe, expect, it } from "vitest";
import { createLogger, type LogFields } from "./logger.ts";
import { redactUrlCredentials, serializeError } from "./redact.ts";

function capture(base: LogFields = {}, level?: "debug" | "info" | "warn" | "error") {
  const lines: string[] = [];
  const log = createLogger(base, (l) => lines.push(l), level ? { level } : {});
  const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log, lines, records };
}

describe("createLogger", () => {
  it("writes one JSON object per line with ts, level and msg", () => {
    const { log, lines, records } = capture();
    log.info("hello", { n: 1 });
    log.error("bad");
    expect(lines).toHaveLength(2);
    expect(lines.every((l) => !l.includes("\n"))).toBe(true);
    const [first, second] = records();
    expect(first).toMatchObject({ level: "info", msg: "hello", n: 1 });
    expect(Number.isNaN(Date.parse(String(first?.ts)))).toBe(false);
    expect(second).toMatchObject({ level: "error", msg: "bad" });
  });

  it("drops records below the configured level", () => {
    const { log, records } = capture({}, "warn");
    log.debug("d");
    log.info("i");
    log.warn("w");
    log.error("e");
    expect(records().map((r) => r.level)).toEqual(["warn", "error"]);
  });

  it("child loggers carry their ids, nest, and leave the parent untouched", () => {
    const { log, records } = capture({ service: "web" });
    const run = log.child({ org_id: "o1", run_id: "r1" });
    const attempt = run.child({ job_id: "j1", attempt_id: "a1" });
    attempt.warn("lease lost", { epoch: 3 });
    log.info("plain");
    const [a, p] = records();
    expect(a).toMatchObject({
      service: "web",
      org_id: "o1",
      run_id: "r1",
      job_id: "j1",
      attempt_id: "a1",
      epoch: 3,
      msg: "lease lost",
    });
    expect(p).not.toHaveProperty("run_id");
    expect(p).toMatchObject({ service: "web", msg: "plain" });
  });

  it("a field cannot overwrite the record's own level or message", () => {
    const { log, records } = capture();
    log.info("real", { level: "error", msg: "fake" });
    expect(records()[0]).toMatchObject({ level: "info", msg: "real", field_level: "error", field_msg: "fake" });
  });
});

describe("redaction", () => {
  it("redacts secret keys at the top level and in child fields", () => {
    const { log, lines } = capture({ agentToken: "kiln_at_1" });
    log.info("x", { token: "t0p", Authorization: "Bearer abc", password: "pw", sessionCookie: "c", api_key: "k" });
    const text = lines.join("\n");
    for (const secret of ["kiln_at_1", "t0p", "Bearer abc", 'pw"', '"c"', '"k"']) expect(text).not.toContain(secret);
    expect(JSON.parse(lines[0] ?? "{}")).toMatchObject({ agentToken: "[redacted]", token: "[redacted]" });
  });

  it("redacts secret keys inside nested objects and arrays", () => {
    const { log, records } = capture();
    log.info("req", {
      req: { headers: { authorization: "Bearer zzz", accept: "json" } },
      stores: [{ s3: { secretAccessKey: "SSS", region: "eu" } }],
    });
    expect(records()[0]).toMatchObject({
      req: { headers: { authorization: "[redacted]", accept: "json" } },
      stores: [{ s3: { secretAccessKey: "[redacted]", region: "eu" } }],
    });
  });

  it("hides credentials in URLs anywhere in a record", () => {
    const { log, lines } = capture();
    log.error("clone of https://x-access-token:ghs_abc@github.com/o/r failed", {
      url: "https://user:hunter2@git.example.com/r.git",
      nested: { remote: new URL("https://bob:pw9@h.example/x") },
    });
    const text = lines[0] ?? "";
    expect(text).not.toContain("ghs_abc");
    expect(text).not.toContain("hunter2");
    expect(text).not.toContain("pw9");
    expect(text).toContain("https://***@git.example.com/r.git");
    expect(redactUrlCredentials("file:///tmp/x and http://a@b/c")).toBe("file:///tmp/x and http://***@b/c");
  });

  it("survives cycles and cuts deep nesting", () => {
    const { log, records } = capture();
    const loop: Record<string, unknown> = { name: "a" };
    loop.self = loop;
    const deep = { a: { b: { c: { d: { e: { f: { g: { h: 1 } } } } } } } };
    const shared = { k: 1 };
    log.info("odd", { loop, deep, pair: [shared, shared] });
    const r = records()[0] as { loop: { self: unknown }; deep: unknown; pair: unknown[] };
    expect(r.loop.self).toBe("[circular]");
    expect(JSON.stringify(r.deep)).toContain("[truncated]");
    expect(r.pair).toEqual([{ k: 1 }, { k: 1 }]);
  });
});

describe("error serialisation", () => {
  it("keeps name, message, code and the cause chain", () => {
    const root = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" });
    const err = new TypeError("claim failed", { cause: root });
    expect(serializeError(err)).toEqual({
      name: "TypeError",
      message: "claim failed",
      cause: { name: "Error", message: "connect ECONNREFUSED 127.0.0.1:5432", code: "ECONNREFUSED" },
    });
  });

  it("serialises Errors passed as fields (JSON.stringify alone gives {})", () => {
    const { log, records } = capture();
    class HttpError extends Error {
      override name = "HttpError";
      code = 503;
    }
    log.error("upload", {
      err: new HttpError("store unavailable"),
      nested: { e: new Error("inner", { cause: "why" }) },
    });
    expect(records()[0]).toMatchObject({
      err: { name: "HttpError", message: "store unavailable", code: 503 },
      nested: { e: { name: "Error", message: "inner", cause: "why" } },
    });
  });

  it("cuts very long error messages", () => {
    expect(serializeError(new Error("x".repeat(10_000))).message).toHaveLength(2_000);
  });

  it("hides URL credentials in error messages and bounds a cyclic cause chain", () => {
    const a = new Error("fetch https://u:tok@h/x failed");
    const b = new Error("b", { cause: a });
    (a as { cause?: unknown }).cause = b;
    const s = serializeError(a);
    expect(s.message).toBe("fetch https://***@h/x failed");
    expect(JSON.stringify(s).split('"name"').length - 1).toBe(4);
  });
});
