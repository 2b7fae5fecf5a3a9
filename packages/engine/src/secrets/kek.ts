// The key-encryption key (ADR 0025): 32 bytes, base64 in the file KILN_SECRETS_KEK_FILE names, id
// KILN_SECRETS_KEK_ID or the first 8 hex characters of the SHA-256 of the 32 key bytes. The KEK is
// never stored in the database, only its id and whether it is the active one.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { DomainError } from "@kiln/domain";

const KEK_BYTES = 32;

export interface Kek {
  id: string;
  key: Buffer;
}

export function kekIdOf(key: Uint8Array): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 8);
}

/** Parses a KEK file's contents (base64 of exactly 32 bytes, surrounding whitespace ignored). */
export function parseKek(text: string, idOverride?: string | null): Kek {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed))
    throw new DomainError("SECRET.KEK_UNAVAILABLE", "the KEK file is not base64");
  const key = Buffer.from(trimmed, "base64");
  if (key.length !== KEK_BYTES)
    throw new DomainError("SECRET.KEK_UNAVAILABLE", `the KEK must be ${KEK_BYTES} bytes (got ${key.length})`);
  return { id: idOverride || kekIdOf(key), key };
}

export function readKekFile(file: string, idOverride?: string | null): Kek {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new DomainError("SECRET.KEK_UNAVAILABLE", `cannot read the KEK file ${file}: ${(err as Error).message}`);
  }
  return parseKek(text, idOverride);
}

/** A new KEK file's contents (for `npm run up` and tests). */
export function generateKekText(): string {
  return `${randomBytes(KEK_BYTES).toString("base64")}\n`;
}

const REREAD_MIN_MS = 1_000;

/**
 * This process's KEK. Read on first use and again when a data key names a KEK id this process
 * does not hold (throttled to once a second): after `kiln secrets rotate-kek` the operator installs
 * the new file at KILN_SECRETS_KEK_FILE on every host, and running web processes pick it up on their
 * next delivery, without a restart. KILN_SECRETS_KEK_ID names the key first read; a changed file's
 * id is always derived from its bytes (the override cannot follow a rotation it does not know of).
 */
export class KekSource {
  private cached: Kek | null = null;
  private firstKeyHash: string | null = null;
  private readAt = -Infinity;

  constructor(
    private readonly file: string | null,
    private readonly idOverride: string | null = null,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  get configured(): boolean {
    return this.file !== null;
  }

  current(): Kek {
    return this.cached ?? this.reload();
  }

  /** The KEK with this id, re-reading the file once if this process holds another. */
  forId(kekId: string): Kek {
    const kek = this.current();
    if (kek.id === kekId) return kek;
    if (this.nowMs() - this.readAt >= REREAD_MIN_MS) {
      const fresh = this.reload();
      if (fresh.id === kekId) return fresh;
    }
    throw new DomainError(
      "SECRET.KEK_UNAVAILABLE",
      `this process holds KEK ${this.cached?.id ?? "none"}, the data key is wrapped under ${kekId}`,
    );
  }

  private reload(): Kek {
    if (!this.file) throw new DomainError("SECRET.KEK_UNAVAILABLE", "KILN_SECRETS_KEK_FILE is not set");
    this.readAt = this.nowMs();
    const raw = readKekFile(this.file);
    const hash = createHash("sha256").update(raw.key).digest("hex");
    this.firstKeyHash ??= hash;
    const id = this.idOverride && hash === this.firstKeyHash ? this.idOverride : raw.id;
    this.cached = { id, key: raw.key };
    return this.cached;
  }
}
