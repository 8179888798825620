/**
 * The leader's proposal-dedup cache as a unit (governed.md R-D4): it remembers only keyed application entries,
 * at most `limit` keys with the least recently remembered forgotten first, 0 turns it off, every hit is checked
 * against the live log (a missing, unkeyed or differently-keyed entry is a miss, never a crash), and `clear`
 * forgets everything.
 */
import { describe, expect, it } from "vitest";
import { ProposalDedup } from "../src/raft/dedup.ts";
import type { LogEntry, ProposalKey } from "../src/index.ts";

const cmd = new Uint8Array([4, 5, 6]);
const app = (index: number, key: ProposalKey | null, command = cmd): LogEntry => ({ index, term: 1, kind: "app", key, command, stampedAt: 0 });
const k = (client: string, seq: number): ProposalKey => ({ client, seq });

function logOf(...entries: LogEntry[]): (i: number) => LogEntry | undefined {
  const m = new Map(entries.map((e) => [e.index, e]));
  return (i) => m.get(i);
}

describe("ProposalDedup", () => {
  it("with limit 0 remembers nothing", () => {
    const d = new ProposalDedup(0);
    d.remember(app(1, k("w", 1)));
    expect(d.size).toBe(0);
    expect(d.lookup(k("w", 1), cmd, logOf(app(1, k("w", 1))))).toBeUndefined();
  });

  it("remembers keyed application entries only", () => {
    const d = new ProposalDedup(8);
    d.remember({ ...app(1, k("w", 1)), kind: "noop" });
    d.remember({ ...app(2, k("w", 2)), kind: "config", config: { voters: ["a"], learners: [] } });
    d.remember(app(3, null));
    expect(d.size).toBe(0);
    d.remember(app(4, k("w", 4)));
    expect(d.size).toBe(1);
    expect(d.lookup(k("w", 4), cmd, logOf(app(4, k("w", 4))))?.index).toBe(4);
  });

  it("skips keys the coalesces predicate refuses", () => {
    const d = new ProposalDedup(8, (key) => !key.client.startsWith("idem:"));
    d.remember(app(1, k("idem:x", 1)));
    d.remember(app(2, k("w", 1)));
    expect(d.size).toBe(1);
  });

  it("re-remembering a key makes it the newest, so the limit forgets another key first", () => {
    const d = new ProposalDedup(2);
    d.remember(app(1, k("a", 1)));
    d.remember(app(2, k("b", 1)));
    d.remember(app(3, k("a", 1))); // retried and re-appended: now the newest
    d.remember(app(4, k("c", 1)));
    expect(d.size).toBe(2);
    const log = logOf(app(2, k("b", 1)), app(3, k("a", 1)), app(4, k("c", 1)));
    expect(d.lookup(k("a", 1), cmd, log)?.index).toBe(3);
    expect(d.lookup(k("b", 1), cmd, log)).toBeUndefined();
    expect(d.lookup(k("c", 1), cmd, log)?.index).toBe(4);
  });

  it("a remembered index no longer holding the same keyed app entry is a miss, not an error", () => {
    const d = new ProposalDedup(8);
    d.remember(app(5, k("w", 1)));
    expect(d.lookup(k("w", 1), cmd, logOf())).toBeUndefined(); // compacted or truncated away
    expect(d.lookup(k("w", 1), cmd, logOf(app(5, null)))).toBeUndefined();
    expect(d.lookup(k("w", 1), cmd, logOf({ ...app(5, null), kind: "noop" }))).toBeUndefined();
    expect(d.lookup(k("w", 1), cmd, logOf(app(5, k("v", 1))))).toBeUndefined();
    expect(d.lookup(k("w", 1), cmd, logOf(app(5, k("w", 2))))).toBeUndefined();
    expect(d.lookup(k("w", 1), new Uint8Array([4, 5, 7]), logOf(app(5, k("w", 1))))).toBeUndefined();
    expect(d.lookup(null, cmd, logOf(app(5, k("w", 1))))).toBeUndefined();
    expect(d.lookup(k("w", 1), cmd, logOf(app(5, k("w", 1))))?.index).toBe(5);
  });

  it("clear forgets every key", () => {
    const d = new ProposalDedup(8);
    d.remember(app(1, k("w", 1)));
    d.remember(app(2, k("w", 2)));
    d.clear();
    expect(d.size).toBe(0);
    expect(d.lookup(k("w", 1), cmd, logOf(app(1, k("w", 1))))).toBeUndefined();
  });
});
