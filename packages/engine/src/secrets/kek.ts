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
 * The names a KEK answers to: the operator's id (KILN_SECRETS_KEK_ID) and always the id derived
 * from its bytes. Every process holding the same bytes answers to the same names, whichever of them
 * the database registered (issue 28: a CLI without the operator's id wrapped under the derived id
 * while the web process held only the named one, and every secret it set was undeliverable).
 */
export function kekNames(kek: Kek): string[] {
  const derived = kekIdOf(kek.key);
  return kek.id === derived ? [derived] : [kek.id, derived];
}

/** This KEK under the name `kekId`, or null when that is not one of its names. */
export function kekNamed(kek: Kek, kekId: string): Kek | null {
  return kekNames(kek).includes(kekId) ? { id: kekId, key: kek.key } : null;
}

/**
 * This process's KEK. Read on first use and again when a data key names a KEK id this process
 * does not hold (throttled to once a second): after `kiln secrets rotate-kek` the operator installs
 * the new file at KILN_SECRETS_KEK_FILE on every host, and running web processes pick it up on their
 * next delivery, without a restart. The key is named KILN_SECRETS_KEK_ID when set and answers to its
 * derived id as well (kekNames): the name depends only on the file's bytes and the variable, never on
 * when the process started, so the web app, the workers and the CLI agree.
 */
export class KekSource {
  private cached: Kek | null = null;
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

  /** The KEK with this id (one of its names), re-reading the file once if this process holds another. */
  forId(kekId: string): Kek {
    const kek = kekNamed(this.current(), kekId);
    if (kek) return kek;
    if (this.nowMs() - this.readAt >= REREAD_MIN_MS) {
      const fresh = kekNamed(this.reload(), kekId);
      if (fresh) return fresh;
    }
    throw new DomainError(
      "SECRET.KEK_UNAVAILABLE",
      `this process holds KEK ${this.cached ? kekNames(this.cached).join(" = ") : "none"}, the data key is wrapped under ${kekId}`,
    );
  }

  private reload(): Kek {
    if (!this.file) throw new DomainError("SECRET.KEK_UNAVAILABLE", "KILN_SECRETS_KEK_FILE is not set");
    this.readAt = this.nowMs();
    this.cached = readKekFile(this.file, this.idOverride);
    return this.cached;
  }
}

/**
 * The one way every process (web, workers, CLI) builds its KEK source from its configuration: the
 * file and the operator's id, both or neither from the same two variables.
 */
export function kekSourceFromEnv(e: {
  KILN_SECRETS_KEK_FILE?: string | null;
  KILN_SECRETS_KEK_ID?: string | null;
}): KekSource {
  return new KekSource(e.KILN_SECRETS_KEK_FILE || null, e.KILN_SECRETS_KEK_ID || null);
}
