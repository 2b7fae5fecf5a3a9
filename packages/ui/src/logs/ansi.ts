// ANSI/VT escape handling for build logs. Only SGR (colour and weight) is interpreted; every other
// control sequence (cursor movement, erase, OSC titles and hyperlinks, DCS, bells) is removed, so a
// log can never move the viewer's cursor, rename the tab, inject links or markup. The output is
// plain text plus a style object per span; the renderer turns styles into React style props built
// from numbers, never into HTML.

export type AnsiColor = { kind: "palette"; index: number } | { kind: "rgb"; r: number; g: number; b: number };

export interface AnsiStyle {
  readonly fg: AnsiColor | null;
  readonly bg: AnsiColor | null;
  readonly bold: boolean;
  readonly dim: boolean;
  readonly italic: boolean;
  readonly underline: boolean;
  readonly inverse: boolean;
  readonly strike: boolean;
}

export interface AnsiSpan {
  text: string;
  style: AnsiStyle;
}

export const DEFAULT_STYLE: AnsiStyle = Object.freeze({
  fg: null,
  bg: null,
  bold: false,
  dim: false,
  italic: false,
  underline: false,
  inverse: false,
  strike: false,
});

export function isDefaultStyle(s: AnsiStyle): boolean {
  return (
    s === DEFAULT_STYLE || (!s.fg && !s.bg && !s.bold && !s.dim && !s.italic && !s.underline && !s.inverse && !s.strike)
  );
}

const ESC = 0x1b;
const CSI8 = 0x9b; // 8-bit CSI, as it appears after UTF-8 decoding
const OSC8 = 0x9d;

// Every C0/C1 control except tab (newlines never reach a line).
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;
// eslint-disable-next-line no-control-regex
const HAS_CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/;

/** True when the text contains anything parseAnsi would interpret or remove. */
export function hasControls(s: string): boolean {
  return HAS_CONTROL.test(s);
}

/**
 * Splits one line into styled spans. `start` is the style in effect at the start of the line
 * (colours carry across lines until reset); `end` is the style after it.
 */
export function parseAnsi(line: string, start: AnsiStyle = DEFAULT_STYLE): { spans: AnsiSpan[]; end: AnsiStyle } {
  const spans: AnsiSpan[] = [];
  let style = start;
  let text = "";
  const flush = () => {
    if (text) spans.push({ text, style });
    text = "";
  };
  let i = 0;
  const n = line.length;
  while (i < n) {
    // Copy the run of plain text up to the next control character in one slice.
    CONTROL.lastIndex = i;
    const m = CONTROL.exec(line);
    const j = m ? m.index : n;
    if (j > i) text += line.slice(i, j);
    if (!m) break;
    i = j;
    const c = line.charCodeAt(i);
    if (c === ESC || c === CSI8 || c === OSC8) {
      const seq = readSequence(line, i);
      if (seq.sgr !== null) {
        const next = applySgrMemo(style, seq.sgr);
        if (next !== style) {
          flush();
          style = next;
        }
      }
      i = seq.end;
    } else {
      // Other C0/C1 controls (bell, backspace, NUL, DEL...) are dropped.
      i++;
    }
  }
  flush();
  return { spans, end: style };
}

/** The visible text of a line: what search matches against and what copy-as-text gives. */
export function stripAnsi(line: string): string {
  if (!hasControls(line)) return line;
  let out = "";
  for (const s of parseAnsi(line).spans) out += s.text;
  return out;
}

/**
 * The style after a line, without building spans: used while ingesting, once per line that has
 * escapes, so it only walks the control sequences and reuses memoised SGR results.
 */
export function styleAfter(line: string, start: AnsiStyle): AnsiStyle {
  let style = start;
  CONTROL.lastIndex = 0;
  for (let m = CONTROL.exec(line); m; m = CONTROL.exec(line)) {
    const c = line.charCodeAt(m.index);
    if (c !== ESC && c !== CSI8 && c !== OSC8) continue;
    const seq = readSequence(line, m.index);
    if (seq.sgr !== null) style = applySgrMemo(style, seq.sgr);
    CONTROL.lastIndex = seq.end;
  }
  return style;
}

// Styles are immutable, so (style, parameters) -> style can be memoised; logs repeat the same few
// sequences millions of times.
const memo = new WeakMap<AnsiStyle, Map<string, AnsiStyle>>();

function applySgrMemo(style: AnsiStyle, params: string): AnsiStyle {
  let m = memo.get(style);
  if (!m) memo.set(style, (m = new Map()));
  let next = m.get(params);
  if (!next) {
    next = applySgr(style, params);
    if (m.size < 256) m.set(params, next);
  }
  return next;
}

interface Sequence {
  end: number;
  /** SGR parameters when the sequence is `CSI ... m`, else null (the sequence is discarded). */
  sgr: string | null;
}

function readSequence(s: string, at: number): Sequence {
  const first = s.charCodeAt(at);
  if (first === CSI8) return readCsi(s, at + 1);
  if (first === OSC8) return readString(s, at + 1);
  const kind = s[at + 1];
  if (kind === undefined) return { end: at + 1, sgr: null };
  if (kind === "[") return readCsi(s, at + 2);
  // OSC, DCS, SOS, PM, APC: strings terminated by BEL or ST (ESC \).
  if (kind === "]" || kind === "P" || kind === "X" || kind === "^" || kind === "_") return readString(s, at + 2);
  // Character-set designations take one more byte: ESC ( B.
  if (
    kind === "(" ||
    kind === ")" ||
    kind === "*" ||
    kind === "+" ||
    kind === "-" ||
    kind === "." ||
    kind === "/" ||
    kind === "#" ||
    kind === "%"
  ) {
    return { end: Math.min(s.length, at + 3), sgr: null };
  }
  // Two-byte sequences (ESC 7, ESC c, ESC =, ...).
  return { end: at + 2, sgr: null };
}

function readCsi(s: string, from: number): Sequence {
  let i = from;
  // Parameter bytes 0x30-0x3F, intermediates 0x20-0x2F, then one final byte 0x40-0x7E.
  while (i < s.length) {
    const c = s.charCodeAt(i);
    if (c >= 0x40 && c <= 0x7e) {
      const params = s.slice(from, i);
      // Private-mode sequences (ESC [ ? 25 l, ESC [ > ...) are never SGR even when they end in m.
      const sgr = s[i] === "m" && /^[0-9;:]*$/.test(params) ? params : null;
      return { end: i + 1, sgr };
    }
    if (c < 0x20 || c > 0x3f) return { end: i, sgr: null }; // malformed: drop what we read
    i++;
  }
  return { end: s.length, sgr: null };
}

function readString(s: string, from: number): Sequence {
  for (let i = from; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x07 || c === 0x9c) return { end: i + 1, sgr: null };
    if (c === ESC && s[i + 1] === "\\") return { end: i + 2, sgr: null };
  }
  // Unterminated: the rest of the line is part of the string, so none of it is shown.
  return { end: s.length, sgr: null };
}

const clamp255 = (v: number | undefined) => (v === undefined || Number.isNaN(v) ? 0 : Math.max(0, Math.min(255, v)));

function readExtendedColor(p: number[], i: number): { color: AnsiColor | null; next: number } {
  const mode = p[i + 1];
  if (mode === 5) {
    const idx = p[i + 2];
    return {
      color: idx === undefined || Number.isNaN(idx) ? null : { kind: "palette", index: clamp255(idx) },
      next: i + 3,
    };
  }
  if (mode === 2)
    return { color: { kind: "rgb", r: clamp255(p[i + 2]), g: clamp255(p[i + 3]), b: clamp255(p[i + 4]) }, next: i + 5 };
  return { color: null, next: p.length };
}

function applySgr(style: AnsiStyle, params: string): AnsiStyle {
  // Colon sub-parameters (38:2::r:g:b) are normalised to the semicolon form; an empty colour-space
  // id (the "::") is dropped.
  const raw = params.includes(":") ? params.replace(/(38|48|58):2::/g, "$1:2:").replace(/:/g, ";") : params;
  const p = raw === "" ? [0] : raw.split(";").map((x) => (x === "" ? 0 : Number(x)));
  const s: { -readonly [K in keyof AnsiStyle]: AnsiStyle[K] } = { ...style };
  for (let i = 0; i < p.length; ) {
    const code = p[i]!;
    if (code === 38 || code === 48 || code === 58) {
      const { color, next } = readExtendedColor(p, i);
      if (code === 38) s.fg = color;
      else if (code === 48) s.bg = color;
      i = next;
      continue;
    }
    applyOne(s, code);
    i++;
  }
  return isDefaultStyle(s) ? DEFAULT_STYLE : s;
}

function applyOne(s: { -readonly [K in keyof AnsiStyle]: AnsiStyle[K] }, code: number): void {
  if (code === 0) Object.assign(s, DEFAULT_STYLE);
  else if (code === 1) s.bold = true;
  else if (code === 2) s.dim = true;
  else if (code === 3) s.italic = true;
  else if (code === 4) s.underline = true;
  else if (code === 7) s.inverse = true;
  else if (code === 9) s.strike = true;
  else if (code === 22) s.bold = s.dim = false;
  else if (code === 23) s.italic = false;
  else if (code === 24) s.underline = false;
  else if (code === 27) s.inverse = false;
  else if (code === 29) s.strike = false;
  else if (code >= 30 && code <= 37) s.fg = { kind: "palette", index: code - 30 };
  else if (code === 39) s.fg = null;
  else if (code >= 40 && code <= 47) s.bg = { kind: "palette", index: code - 40 };
  else if (code === 49) s.bg = null;
  else if (code >= 90 && code <= 97) s.fg = { kind: "palette", index: code - 90 + 8 };
  else if (code >= 100 && code <= 107) s.bg = { kind: "palette", index: code - 100 + 8 };
  // Anything else (blink, fonts, framing...) is ignored rather than guessed at.
}
