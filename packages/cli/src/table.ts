/** Renders rows as an aligned plain-text table with a header line. Numbers-looking cells align right. */
export function table(header: readonly string[], rows: readonly (readonly (string | number | boolean | null | undefined)[])[]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? "-" : String(c))));
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? "").length)));
  const numeric = header.map((_h, i) => cells.length > 0 && cells.every((r) => /^-?[0-9.]+%?$|^-$/.test(r[i] ?? "")));
  const line = (r: readonly string[]) =>
    r
      .map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...cells.map(line)].join("\n") + "\n";
}

/** A share as a percentage with one decimal, or `-`. */
export function pct(x: number | null | undefined): string {
  return x === null || x === undefined ? "-" : `${(x * 100).toFixed(1)}%`;
}
