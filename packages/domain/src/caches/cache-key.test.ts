import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import {
  allowsPrefixFallback,
  cacheReadNamespace,
  cacheReadRefs,
  decideCacheWrite,
  deriveCacheKey,
  type CacheKeyInput,
} from "./cache-key.ts";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const hex = (c: string) => c.repeat(64);
const base: CacheKeyInput = {
  orgId: "org-1",
  repoId: "repo-1",
  namespace: "trusted",
  ref: "refs/heads/main",
  os: "linux",
  arch: "x64",
  imageDigest: `sha256:${hex("d")}`,
  kind: "dependencies",
  version: "deps-v1",
  paths: ["node_modules"],
  inputs: [{ path: "package-lock.json", sha256: hex("a") }],
};
const key = (over: Partial<CacheKeyInput>) => deriveCacheKey({ ...base, ...over }, sha);

describe("cache refs", () => {
  it("a run reads its own ref, then the default branch, never a third", () => {
    expect(cacheReadRefs("refs/heads/feature", "refs/heads/main")).toEqual(["refs/heads/feature", "refs/heads/main"]);
    expect(cacheReadRefs("refs/heads/main", "refs/heads/main")).toEqual(["refs/heads/main"]);
    expect(cacheReadRefs(null, "refs/heads/main")).toEqual(["refs/heads/main"]);
  });
});

describe("cache key derivation", () => {
  it("is deterministic and 64 hex characters", () => {
    expect(key({})).toEqual(key({}));
    expect(key({}).key).toMatch(/^[0-9a-f]{64}$/);
    expect(key({}).prefix).toMatch(/^[0-9a-f]{64}$/);
  });

  it("never lets the user's version alone match across orgs, repos, platforms or images", () => {
    const k = key({}).key;
    for (const over of [
      { orgId: "org-2" },
      { repoId: "repo-2" },
      { ref: "refs/heads/feature" },
      { os: "darwin" },
      { arch: "arm64" },
      { imageDigest: `sha256:${hex("e")}` },
      { imageDigest: null },
      { kind: "directory" as const },
      { version: "deps-v2" },
      { paths: ["node_modules", "x"] },
    ]) {
      expect(key(over).key, JSON.stringify(over)).not.toBe(k);
      expect(key(over).prefix, JSON.stringify(over)).not.toBe(key({}).prefix);
    }
  });

  it("changes the key but not the prefix when an input file changes", () => {
    const changed = key({ inputs: [{ path: "package-lock.json", sha256: hex("b") }] });
    expect(changed.key).not.toBe(key({}).key);
    expect(changed.prefix).toBe(key({}).prefix);
    const absent = key({ inputs: [{ path: "package-lock.json", sha256: null }] });
    expect(absent.key).not.toBe(key({}).key);
    expect(key({ inputs: [] }).key).not.toBe(absent.key);
  });

  it("cannot be confused by separators inside components", () => {
    expect(key({ orgId: "a", repoId: "b,c" }).key).not.toBe(key({ orgId: "a,b", repoId: "c" }).key);
    expect(key({ paths: ["a,b"] }).key).not.toBe(key({ paths: ["a", "b"] }).key);
  });

  it("refuses malformed input hashes", () => {
    expect(() => key({ inputs: [{ path: "x", sha256: "nothex" }] })).toThrow(/malformed/);
  });
});

describe("who reads and writes", () => {
  it("reads the trusted namespace for every run and writes only for trusted runs", () => {
    expect(cacheReadNamespace("trusted")).toBe("trusted");
    expect(cacheReadNamespace("untrusted")).toBe("trusted");
    expect(decideCacheWrite("trusted")).toEqual({ allowed: true, namespace: "trusted" });
    expect(decideCacheWrite("untrusted")).toEqual({ allowed: false, reason: "untrusted_run" });
  });

  it("falls back by prefix only for dependency caches", () => {
    expect(allowsPrefixFallback("dependencies")).toBe(true);
    expect(allowsPrefixFallback("directory")).toBe(false);
  });
});
