// Prints the soak's verdict as a plain-text table (stable enough for the CI test to parse).
import type { CheckRow } from "./checks.ts";

export function formatTable(rows: CheckRow[]): string {
  const head = ["check", "checked", "violations", "result"];
  const body = rows.map((r) => [
    r.name,
    String(r.checked),
    String(r.violations),
    r.na ? "n/a" : r.info ? "info" : r.violations === 0 ? "PASS" : "FAIL",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(" | ")} |`;
  const sep = `|${widths.map((w, i) => (i === 0 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`;
  const details = rows.filter((r) => r.detail).map((r) => `  ${r.name}: ${r.detail}`);
  return [line(head), sep, ...body.map(line), ...(details.length ? ["", ...details] : [])].join("\n");
}

export function formatCounts(title: string, counts: Record<string, number>): string {
  const parts = Object.entries(counts)
    .filter(([, n]) => n > 0)
    .map(([k, n]) => `${k} ${n}`);
  return `${title}: ${parts.length ? parts.join(", ") : "none"}`;
}
