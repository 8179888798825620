/**
 * ProposalDedup.lookup re-checks the kind of the entry at a remembered index (governed.md R-D4; dedup.ts: "same
 * index, kind, key and command bytes"): an entry there that carries the same key and command but is not an
 * application entry — a no-op or a configuration entry, which the wire format lets carry a key — is a miss.
 */
import { describe, expect, it } from "vitest";
import { ProposalDedup } from "../src/raft/dedup.ts";
import type { LogEntry } from "../src/index.ts";

const cmd = new Uint8Array([7, 8, 9]);
const key = { client: "w", seq: 1 };

describe("ProposalDedup.lookup checks the entry's kind", () => {
  it("a keyed no-op or configuration entry at the remembered index, with the same key and command, is a miss", () => {
    const d = new ProposalDedup(8);
    const app: LogEntry = { index: 5, term: 1, kind: "app", key, command: cmd, stampedAt: 0 };
    d.remember(app);
    expect(d.lookup(key, cmd, (i) => (i === 5 ? app : undefined))).toBe(app);
    const noop: LogEntry = { ...app, kind: "noop" };
    expect(d.lookup(key, cmd, (i) => (i === 5 ? noop : undefined))).toBeUndefined();
    const config: LogEntry = { ...app, kind: "config", config: { voters: ["a"], learners: [] } };
    expect(d.lookup(key, cmd, (i) => (i === 5 ? config : undefined))).toBeUndefined();
  });
});
