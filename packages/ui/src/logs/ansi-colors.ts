// ANSI styles to React style props. Values are built only from numbers and fixed variable names,
// so no log content ever reaches CSS.
import type { CSSProperties } from "react";
import type { AnsiColor, AnsiStyle } from "./ansi.ts";

// The 16 base colours are CSS variables (globals.css sets light and dark values) with fallbacks.
const BASE = [
  "#1f2328",
  "#cf222e",
  "#116329",
  "#9a6700",
  "#0969da",
  "#8250df",
  "#1b7c83",
  "#6e7781",
  "#57606a",
  "#a40e26",
  "#1a7f37",
  "#b08800",
  "#218bff",
  "#a475f9",
  "#3192aa",
  "#8c959f",
];

const CUBE = [0, 95, 135, 175, 215, 255];

export function colorCss(c: AnsiColor): string {
  if (c.kind === "rgb") return `rgb(${c.r | 0} ${c.g | 0} ${c.b | 0})`;
  const i = c.index | 0;
  if (i < 16) return `var(--kiln-ansi-${i}, ${BASE[i]})`;
  if (i < 232) {
    const n = i - 16;
    return `rgb(${CUBE[Math.floor(n / 36)]} ${CUBE[Math.floor(n / 6) % 6]} ${CUBE[n % 6]})`;
  }
  const g = 8 + (i - 232) * 10;
  return `rgb(${g} ${g} ${g})`;
}

export function styleCss(s: AnsiStyle): CSSProperties | undefined {
  let fg = s.fg ? colorCss(s.fg) : undefined;
  let bg = s.bg ? colorCss(s.bg) : undefined;
  if (s.inverse) [fg, bg] = [bg ?? "var(--kiln-log-bg, #fff)", fg ?? "var(--kiln-log-fg, #1f2328)"];
  const deco = [s.underline ? "underline" : "", s.strike ? "line-through" : ""].filter(Boolean).join(" ");
  const css: CSSProperties = {};
  if (fg) css.color = fg;
  if (bg) css.backgroundColor = bg;
  if (s.bold) css.fontWeight = 700;
  if (s.dim) css.opacity = 0.7;
  if (s.italic) css.fontStyle = "italic";
  if (deco) css.textDecoration = deco;
  return Object.keys(css).length > 0 ? css : undefined;
}
