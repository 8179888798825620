/**
 * The value-type comparisons (governed.md §4.1): `sameConfig` is order-insensitive equality of the voter and
 * learner sets, and `sameEntry` is equality of every replicated field of a log entry — each field on its own
 * must make two entries different, or the invariant checks that use it would miss a divergent log.
 */
import { describe, expect, it } from "vitest";
import { sameConfig, sameEntry } from "../src/index.ts";
import type { ClusterConfig, LogEntry } from "../src/index.ts";

const base: LogEntry = {
  index: 7,
  term: 3,
  kind: "app",
  key: { client: "w", seq: 2 },
  command: new Uint8Array([1, 2, 3]),
  config: { voters: ["a", "b"], learners: ["c"] },
  stampedAt: 1000,
};
const withField = (patch: Partial<LogEntry>): LogEntry => ({ ...base, ...patch });

describe("sameConfig", () => {
  it("is equality of both sets, ignoring order", () => {
    const x: ClusterConfig = { voters: ["a", "b", "c"], learners: ["d", "e"] };
    expect(sameConfig(x, { voters: ["c", "a", "b"], learners: ["e", "d"] })).toBe(true);
    expect(sameConfig({ voters: [], learners: [] }, { voters: [], learners: [] })).toBe(true);
  });

  it("tells apart sets of different sizes even when one contains the other", () => {
    expect(sameConfig({ voters: ["a"], learners: [] }, { voters: ["a", "b"], learners: [] })).toBe(false);
    expect(sameConfig({ voters: ["a", "b"], learners: [] }, { voters: ["a"], learners: [] })).toBe(false);
    expect(sameConfig({ voters: ["a"], learners: ["x", "y"] }, { voters: ["a"], learners: ["x"] })).toBe(false);
  });

  it("tells apart configurations that differ only in voters or only in learners", () => {
    expect(sameConfig({ voters: ["a", "b"], learners: ["c"] }, { voters: ["a", "d"], learners: ["c"] })).toBe(false);
    expect(sameConfig({ voters: ["a", "b"], learners: ["c"] }, { voters: ["a", "b"], learners: ["d"] })).toBe(false);
  });
});

describe("sameEntry", () => {
  it("holds for an entry and a field-by-field copy (fresh arrays, reordered config)", () => {
    const copy: LogEntry = {
      ...base,
      key: { client: "w", seq: 2 },
      command: new Uint8Array([1, 2, 3]),
      config: { voters: ["b", "a"], learners: ["c"] },
    };
    expect(sameEntry(base, copy)).toBe(true);
    const plain = withField({ key: null, command: new Uint8Array(0) });
    delete (plain as { config?: ClusterConfig }).config;
    expect(sameEntry(plain, { ...plain })).toBe(true);
  });

  it.each<[string, Partial<LogEntry>]>([
    ["index", { index: 8 }],
    ["term", { term: 4 }],
    ["kind", { kind: "noop" }],
    ["stampedAt", { stampedAt: 1001 }],
    ["key present vs absent", { key: null }],
    ["key client", { key: { client: "v", seq: 2 } }],
    ["key seq", { key: { client: "w", seq: 3 } }],
    ["command length", { command: new Uint8Array([1, 2]) }],
    ["command first byte", { command: new Uint8Array([9, 2, 3]) }],
    ["command last byte", { command: new Uint8Array([1, 2, 9]) }],
    ["config present vs absent", { config: undefined }],
    ["config voters", { config: { voters: ["a", "x"], learners: ["c"] } }],
    ["config learners", { config: { voters: ["a", "b"], learners: [] } }],
  ])("differs when only the %s differs (both directions)", (_name, patch) => {
    const other = withField(patch);
    if ("config" in patch && patch.config === undefined) delete (other as { config?: ClusterConfig }).config;
    expect(sameEntry(base, other)).toBe(false);
    expect(sameEntry(other, base)).toBe(false);
  });
});
