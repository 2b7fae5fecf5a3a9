// Best-effort masking of secret values in log output (documented as best effort in ADR 0006: a
// step can always print a secret transformed, e.g. base64-encoded or one character per line).
//
// It works on the byte stream, not on chunks: a secret split across two pipe reads, or two
// 64 KiB chunks, is still masked, because the masker holds back the shortest tail that could be
// the start of a secret until the next bytes (or the end of the stream) decide it. Held bytes are
// at most (longest secret - 1) per stream.

/** Env entries whose name matches this carry secrets (there is no secrets store yet). */
const SECRET_ENV_NAME = /SECRET|TOKEN|PASSWORD|KEY/i;
/** Shorter values are not masked: masking "1" or "yes" would destroy logs and hide nothing. */
const MIN_SECRET_LENGTH = 4;
const SECRET_MASK = "***";

/** The values to mask for a job: secret-named env entries, plus each long line of multi-line ones. */
export function secretValuesFromEnv(env: Readonly<Record<string, string>>): string[] {
  const out = new Set<string>();
  for (const [name, value] of Object.entries(env)) {
    if (!SECRET_ENV_NAME.test(name)) continue;
    if (value.length >= MIN_SECRET_LENGTH) out.add(value);
    if (value.includes("\n")) {
      for (const line of value.split(/\r?\n/)) if (line.trim().length >= 8) out.add(line);
    }
  }
  // Longest first: when two secrets start at the same byte, the longer one is masked.
  return [...out].sort((a, b) => b.length - a.length);
}

// Bytes are matched through a single-byte decoding: every byte becomes exactly one UTF-16 code
// unit (a bijection), so string indices are byte indices and String#indexOf does the searching.
const latin1 = new TextDecoder("latin1");
const utf8 = new TextEncoder();

function asLatin1(bytes: Uint8Array): string {
  return latin1.decode(bytes);
}

export class SecretMasker {
  private secrets: string[];
  private readonly mask = utf8.encode(SECRET_MASK);
  private held: Uint8Array = new Uint8Array(0);
  /** Occurrences masked so far (a scan that only needs to know whether a value appears reads this). */
  hits = 0;

  constructor(secretValues: readonly string[]) {
    // Compare in the same byte->code-unit space as the data.
    this.secrets = secretValues.map((s) => asLatin1(utf8.encode(s))).filter((s) => s.length > 0);
  }

  private get longest(): number {
    let n = 0;
    for (const s of this.secrets) n = Math.max(n, s.length);
    return n;
  }

  get active(): boolean {
    return this.secrets.length > 0;
  }

  /** Bytes held back because they may begin a secret. */
  get heldBytes(): number {
    return this.held.length;
  }

  /**
   * A masker for `more` values as well, carrying over this one's held bytes: they are scanned again
   * against every pattern with the next bytes, so a value learnt mid-stream is still masked in them.
   */
  withMore(more: readonly string[]): SecretMasker {
    const next = new SecretMasker([]);
    const all = new Set([...this.secrets, ...more.map((s) => asLatin1(utf8.encode(s)))]);
    next.secrets = [...all].filter((s) => s.length > 0).sort((a, b) => b.length - a.length);
    next.held = this.held;
    next.hits = this.hits;
    return next;
  }

  /** Masks what can be decided now; returns the bytes safe to emit (possibly empty). */
  push(data: Uint8Array): Uint8Array {
    if (!this.active) return data;
    const buf = this.held.length > 0 ? concat([this.held, data]) : data;
    const { out, rest } = this.scan(buf, false);
    this.held = rest.slice();
    return out;
  }

  /** End of stream: the held tail cannot become a secret any more. */
  end(): Uint8Array {
    if (!this.active || this.held.length === 0) return new Uint8Array(0);
    const { out } = this.scan(this.held, true);
    this.held = new Uint8Array(0);
    return out;
  }

  private scan(buf: Uint8Array, final: boolean): { out: Uint8Array; rest: Uint8Array } {
    const text = asLatin1(buf);
    const parts: Uint8Array[] = [];
    let pos = 0;
    let heldFrom: number | null = null;
    for (;;) {
      const hit = this.nextMatch(text, pos);
      if (!hit) break;
      // A match that starts earlier or at the same byte but is longer may still complete (a value's
      // padded base64 after its unpadded form, its JSON escape before it): decide only once it
      // cannot, so the output is the same wherever the stream was cut.
      const undecided = final ? null : this.undecidedBefore(text, pos, hit);
      if (undecided !== null) {
        heldFrom = undecided;
        break;
      }
      if (hit.at > pos) parts.push(buf.subarray(pos, hit.at));
      parts.push(this.mask);
      this.hits++;
      pos = hit.at + hit.length;
    }
    if (heldFrom !== null) {
      if (heldFrom > pos) parts.push(buf.subarray(pos, heldFrom));
      return { out: parts.length === 1 && parts[0] ? parts[0] : concat(parts), rest: buf.subarray(heldFrom) };
    }
    const keep = final ? 0 : this.undecidedTail(text, pos);
    const cut = buf.length - keep;
    if (cut > pos) parts.push(buf.subarray(pos, cut));
    return { out: parts.length === 1 && parts[0] ? parts[0] : concat(parts), rest: buf.subarray(cut) };
  }

  /** Leftmost occurrence of any secret at or after `from`; the longest wins a tie. */
  private nextMatch(text: string, from: number): { at: number; length: number } | null {
    let best: { at: number; length: number } | null = null;
    for (const s of this.secrets) {
      const at = text.indexOf(s, from);
      if (at !== -1 && (!best || at < best.at || (at === best.at && s.length > best.length)))
        best = { at, length: s.length };
    }
    return best;
  }

  /**
   * Where an undecided match starts that would win over `hit` (leftmost, then longest) once more
   * bytes arrive: a position at or before the hit from which the rest of the text is a proper prefix
   * of a secret too long to be complete yet. Null when `hit` is final.
   */
  private undecidedBefore(text: string, pos: number, hit: { at: number; length: number }): number | null {
    const longest = this.longest;
    for (let q = Math.max(pos, text.length - longest + 1); q <= hit.at; q++) {
      const tail = text.length - q;
      for (const s of this.secrets) {
        if (s.length > tail && text.startsWith(s.slice(0, tail), q)) return q;
      }
    }
    return null;
  }

  /** Length of the longest tail (after `from`) that is a proper prefix of some secret. */
  private undecidedTail(text: string, from: number): number {
    let keep = 0;
    const available = text.length - from;
    for (const s of this.secrets) {
      for (let k = Math.min(s.length - 1, available); k > keep; k--) {
        if (text.endsWith(s.slice(0, k))) {
          keep = k;
          break;
        }
      }
    }
    return keep;
  }
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
