/**
 * Splitting a ledger value into fragments (node.md §4.2). Works on ledger.md §10's canonical text, so
 * it needs nothing from the ledger but its encoding: every component entry is assigned to a group —
 * everything keyed by one `AttachmentId` (record set, lifecycle, gauge, the four counters and the
 * transfer rows of that edge's path key) forms one group; each mint is a group; each donor row of the
 * root path's transfers is a group. Groups are packed greedily, in key order, into fragments whose
 * own canonical text stays within a byte budget. The join of all fragments is the original value
 * because every entry lands in exactly one fragment and component joins are per key.
 */

/** ledger.md §10 component keys, in canonical order. */
const COMPONENTS = ["records", "mints", "issued", "returned", "leafSpent", "rollupSpent", "transfers", "lifecycle", "gauges"] as const;
type Component = (typeof COMPONENTS)[number];
const FORMAT = "heddle-ledger/1";

/** Result of splitting: fragments (canonical ledger texts) and the groups that could not fit. */
export interface LedgerSplit {
  fragments: string[];
  /** Groups whose own text exceeds the budget; they were left out. */
  oversizeGroups: { group: string; bytes: number }[];
}

interface Entry {
  readonly component: Component;
  readonly index: number; // position in the canonical component list, to keep canonical order
  readonly json: unknown;
}

const utf8Length = (s: string) => Buffer.byteLength(s, "utf8");

/** Bytes the text costs once carried as a JSON string inside a message (quotes and escapes). */
export function escapedLength(text: string): number {
  return utf8Length(JSON.stringify(text));
}

function groupKey(component: Component, entry: unknown[]): string[] {
  const key = entry[0] as string;
  if (component === "mints") return [`m\u0000${key}`];
  if (component === "transfers") {
    if (key !== "") return [`e\u0000${key}`];
    // The root path's rows have no edge; each donor's row travels on its own.
    const rows = entry[1] as unknown[][];
    return rows.map((row) => `r\u0000${row[0] as string}`);
  }
  return [`e\u0000${key}`];
}

function render(entries: readonly Entry[]): string {
  const by = new Map<Component, Entry[]>();
  for (const e of entries) {
    let list = by.get(e.component);
    if (list === undefined) by.set(e.component, (list = []));
    list.push(e);
  }
  const out: Record<string, unknown> = { format: FORMAT };
  for (const c of COMPONENTS) {
    const list = by.get(c);
    if (list === undefined || list.length === 0) continue;
    list.sort((a, b) => a.index - b.index);
    if (c === "transfers") {
      // Root-path donor rows of one key are separate entries; merge rows of the same key back together.
      const merged: unknown[][] = [];
      for (const e of list) {
        const [k, rows] = e.json as [string, unknown[]];
        const last = merged.at(-1);
        if (last !== undefined && last[0] === k) (last[1] as unknown[]).push(...rows);
        else merged.push([k, [...rows]]);
      }
      out[c] = merged;
    } else {
      out[c] = list.map((e) => e.json);
    }
  }
  return JSON.stringify(out);
}

/**
 * Splits the canonical text of a ledger value into fragments whose canonical text, once escaped as a
 * JSON string, is at most `budget` bytes. A value that already fits is returned as one fragment.
 */
export function splitLedgerText(text: string, budget: number): LedgerSplit {
  if (escapedLength(text) <= budget) return { fragments: [text], oversizeGroups: [] };
  const parsed = JSON.parse(text) as Record<string, unknown>;
  const groups = new Map<string, Entry[]>();
  for (const c of COMPONENTS) {
    const list = parsed[c] as unknown[][] | undefined;
    if (list === undefined) continue;
    list.forEach((entry, index) => {
      if (c === "transfers" && entry[0] === "") {
        // Split the root path's transfers per donor row.
        for (const row of entry[1] as unknown[][]) {
          const k = `r\u0000${row[0] as string}`;
          let g = groups.get(k);
          if (g === undefined) groups.set(k, (g = []));
          g.push({ component: c, index, json: ["", [row]] });
        }
        return;
      }
      for (const k of groupKey(c, entry)) {
        let g = groups.get(k);
        if (g === undefined) groups.set(k, (g = []));
        g.push({ component: c, index, json: entry });
      }
    });
  }
  const keys = [...groups.keys()].sort();
  const fragments: string[] = [];
  const oversizeGroups: { group: string; bytes: number }[] = [];
  // Sizes add up conservatively: merging two fragments shares the wrapper and component headers, so
  // the merged text is never longer than the sum of the parts minus one wrapper.
  const wrapper = escapedLength(JSON.stringify({ format: FORMAT }));
  let current: Entry[] = [];
  let estimate = wrapper;
  for (const k of keys) {
    const g = groups.get(k)!;
    const alone = escapedLength(render(g));
    if (alone > budget) {
      oversizeGroups.push({ group: k.slice(2), bytes: alone });
      continue;
    }
    if (current.length > 0 && estimate + alone - wrapper > budget) {
      fragments.push(render(current));
      current = [];
      estimate = wrapper;
    }
    current.push(...g);
    estimate += alone - wrapper;
  }
  if (current.length > 0) fragments.push(render(current));
  if (fragments.length === 0) fragments.push(JSON.stringify({ format: FORMAT }));
  return { fragments, oversizeGroups };
}
