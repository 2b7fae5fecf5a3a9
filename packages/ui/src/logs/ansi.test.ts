import { describe, expect, it } from "vitest";
import { DEFAULT_STYLE, hasControls, parseAnsi, stripAnsi } from "./ansi.ts";
import { colorCss, styleCss } from "./ansi-colors.ts";

const ESC = "\u001b";

describe("parseAnsi: SGR is interpreted", () => {
  it("splits text into styled spans and resets", () => {
    const { spans, end } = parseAnsi(`plain ${ESC}[1;31merror${ESC}[0m done`);
    expect(spans.map((s) => s.text)).toEqual(["plain ", "error", " done"]);
    expect(spans[1]!.style).toMatchObject({ bold: true, fg: { kind: "palette", index: 1 } });
    expect(spans[2]!.style).toBe(DEFAULT_STYLE);
    expect(end).toBe(DEFAULT_STYLE);
  });

  it("carries style across lines until reset", () => {
    const a = parseAnsi(`${ESC}[32mgreen starts`);
    const b = parseAnsi("still green", a.end);
    expect(b.spans[0]!.style.fg).toEqual({ kind: "palette", index: 2 });
    expect(parseAnsi(`${ESC}[mplain`, a.end).spans[0]!.style).toBe(DEFAULT_STYLE);
  });

  it("handles bright, 256-colour and truecolor (semicolon and colon forms), and clamps", () => {
    expect(parseAnsi(`${ESC}[91mx`).spans[0]!.style.fg).toEqual({ kind: "palette", index: 9 });
    expect(parseAnsi(`${ESC}[38;5;208mx`).spans[0]!.style.fg).toEqual({ kind: "palette", index: 208 });
    expect(parseAnsi(`${ESC}[48;2;10;20;30mx`).spans[0]!.style.bg).toEqual({ kind: "rgb", r: 10, g: 20, b: 30 });
    expect(parseAnsi(`${ESC}[38:2::1:2:3mx`).spans[0]!.style.fg).toEqual({ kind: "rgb", r: 1, g: 2, b: 3 });
    expect(parseAnsi(`${ESC}[38;2;999;0;7mx`).spans[0]!.style.fg).toEqual({ kind: "rgb", r: 255, g: 0, b: 7 });
    expect(parseAnsi(`${ESC}[1;22mx`).spans[0]!.style).toBe(DEFAULT_STYLE);
    // A malformed sequence (an intermediate byte among the digits) is dropped whole, up to its final byte.
    expect(parseAnsi(`${ESC}[38;2;1;-5;7mx`).spans).toEqual([{ text: "x", style: DEFAULT_STYLE }]);
  });
});

describe("parseAnsi: everything else is removed, never executed", () => {
  it("drops cursor movement, erase, private modes and malformed CSI", () => {
    expect(stripAnsi(`a${ESC}[2Jb${ESC}[10;20Hc${ESC}[?25ld${ESC}[Ke`)).toBe("abcde");
    expect(stripAnsi(`x${ESC}[?1049hy`)).toBe("xy");
  });

  it("drops OSC titles and hyperlinks (BEL or ST terminated), DCS and unterminated strings", () => {
    expect(stripAnsi(`${ESC}]0;pwned title\u0007after`)).toBe("after");
    expect(stripAnsi(`${ESC}]8;;https://evil.example${ESC}\\click${ESC}]8;;${ESC}\\`)).toBe("click");
    expect(stripAnsi(`a${ESC}Pq#0;2;0;0;0${ESC}\\b`)).toBe("ab");
    expect(stripAnsi(`visible${ESC}]52;c;Y29weQ==`)).toBe("visible");
  });

  it("drops 8-bit C1 controls, bells, backspaces and NULs but keeps tabs", () => {
    expect(stripAnsi(`a\u009b31mb\u009d0;t\u0007c`)).toBe("abc");
    expect(stripAnsi("r\u0007i\bn\u0000g\tx")).toBe("ring\tx");
    expect(stripAnsi(`${ESC}(Bok${ESC}7${ESC}c`)).toBe("ok");
  });

  it("keeps markup as text: the renderer never sees HTML", () => {
    const line = `${ESC}[31m<img src=x onerror=alert(1)>${ESC}[0m<script>`;
    expect(
      parseAnsi(line)
        .spans.map((s) => s.text)
        .join(""),
    ).toBe("<img src=x onerror=alert(1)><script>");
  });

  it("a colour value cannot inject CSS", () => {
    const s = parseAnsi(`${ESC}[38;2;1;2;3;48;5;300mx`).spans[0]!.style;
    expect(styleCss(s)).toEqual({ color: "rgb(1 2 3)", backgroundColor: "rgb(238 238 238)" });
    expect(colorCss({ kind: "palette", index: 1 })).toBe("var(--kiln-ansi-1, #cf222e)");
  });

  it("hasControls is the fast path test", () => {
    expect(hasControls("plain text\twith tab")).toBe(false);
    expect(hasControls(`${ESC}[0m`)).toBe(true);
    expect(hasControls("\u009b")).toBe(true);
  });
});
