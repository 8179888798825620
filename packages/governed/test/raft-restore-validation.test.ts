/**
 * Restore validation (governed.md §4.4 R-P3, R-P4): a core built from a persisted state that is valid except for
 * one field refuses to start with a `RaftRestoreError` naming the field and the value, and the neighbouring valid
 * value of that field is accepted. The ceiling is kept small (10) so every bound can be reached; the role and
 * readiness of a fresh core are pinned at the end.
 */
import { describe, expect, it } from "vitest";
import { raftConfig, RaftCore, RaftRestoreError } from "../src/index.ts";
import type { ClusterConfig, LogEntry, PersistedState, StoredSnapshot } from "../src/index.ts";

const C = 10; // termCeiling of every core here
const ONE: ClusterConfig = { voters: ["f"], learners: [] };

function e(index: number, term: number, extra: Partial<LogEntry> = {}): LogEntry {
  return { index, term, kind: "app", key: null, command: new Uint8Array([index]), stampedAt: 0, ...extra };
}
/** Entries `from..to`, all of term `term`. */
function run(from: number, to: number, term: number): LogEntry[] {
  const out: LogEntry[] = [];
  for (let i = from; i <= to; i++) out.push(e(i, term));
  return out;
}
function snap(lastIndex: number, lastTerm: number): StoredSnapshot {
  return { lastIndex, lastTerm, config: ONE, state: new Uint8Array() };
}
function st(term: number, entries: LogEntry[] = [], snapshot: StoredSnapshot | null = null): PersistedState {
  return { term, votedFor: null, snapshot, entries };
}
function core(p: PersistedState, voters: readonly string[] = ["f"]): RaftCore {
  return new RaftCore({
    id: "f",
    bootstrap: { voters, learners: [] },
    persisted: p,
    config: raftConfig({ termCeiling: C }),
    random: () => 0.5,
    now: 0,
  });
}
/** Construction throws a RaftRestoreError whose message is exactly the corrupt-store message naming `why`. */
function refused(p: PersistedState, why: string): void {
  let err: unknown = null;
  try {
    core(p);
  } catch (x) {
    err = x;
  }
  expect(err).toBeInstanceOf(RaftRestoreError);
  expect((err as Error).message).toBe(`node f: corrupt store: ${why}`);
}

describe("restore: stored term (R-P3)", () => {
  it("accepts 0 and the ceiling itself", () => {
    expect(core(st(0)).term).toBe(0);
    expect(core(st(C)).term).toBe(C);
  });
  it.each([
    [-1, "term -1"],
    [1.5, "term 1.5"],
    [Number.NaN, "term NaN"],
    [C + 1, `term ${C + 1}`],
  ])("refuses term %s", (term, why) => refused(st(term), why));
});

describe("restore: snapshot index and term (R-P3)", () => {
  it("accepts snapshot index 1 and the ceiling, snapshot term 1 and the ceiling", () => {
    const low = core(st(C, [], snap(1, 1)));
    expect(low.floor).toBe(1);
    expect(low.lastIndex).toBe(1);
    expect(low.termAt(1)).toBe(1);
    const high = core(st(C, [], snap(C, C)));
    expect(high.floor).toBe(C);
    expect(high.termAt(C)).toBe(C);
    expect(high.commitIndex).toBe(C);
  });
  it.each([
    [0, "snapshot index 0"],
    [-1, "snapshot index -1"],
    [1.5, "snapshot index 1.5"],
    [Number.NaN, "snapshot index NaN"],
    [C + 1, `snapshot index ${C + 1}`],
  ])("refuses snapshot index %s", (lastIndex, why) => refused(st(C, [], snap(lastIndex, 1)), why));
  it.each([
    [0, "snapshot term 0"],
    [2.5, "snapshot term 2.5"],
    [Number.NaN, "snapshot term NaN"],
    // above the ceiling is named as such, not only as "above the stored term"
    [C + 1, `snapshot term ${C + 1}`],
  ])("refuses snapshot term %s", (lastTerm, why) => refused(st(C, [], snap(5, lastTerm)), why));
  it("refuses a snapshot term above the stored term and accepts an equal one", () => {
    refused(st(4, [], snap(5, 5)), "snapshot term 5 above stored term 4");
    expect(core(st(5, [], snap(5, 5))).termAt(5)).toBe(5);
  });
});

describe("restore: the entry sequence (R-P3, R-P4)", () => {
  it("refuses a gap, naming the entry and its predecessor", () => {
    refused(st(3, [e(1, 1), e(3, 1)]), "entry 3 follows 1");
    refused(st(3, [e(2, 1)]), "entry 2 follows 0");
    refused(st(3, [e(7, 3)], snap(5, 3)), "entry 7 follows 5");
  });
  it("loads only the entries above the snapshot floor (a crash between snapshot and discard)", () => {
    const f = core(st(3, [...run(3, 5, 2), e(6, 3), e(7, 3)], snap(5, 2)));
    expect(f.floor).toBe(5);
    expect(f.lastIndex).toBe(7);
    expect(f.entryAt(5)).toBeUndefined();
    expect(f.termAt(6)).toBe(3);
  });
  it.each([
    [0, "entry 1 term 0"],
    [1.5, "entry 1 term 1.5"],
    [Number.NaN, "entry 1 term NaN"],
    [C + 1, `entry 1 term ${C + 1}`],
  ])("refuses entry term %s", (term, why) => refused(st(C, [e(1, term)]), why));
  it("accepts entry term 1 and the ceiling", () => {
    const f = core(st(C, [e(1, 1), e(2, C)]));
    expect(f.termAt(1)).toBe(1);
    expect(f.termAt(2)).toBe(C);
  });
  it("refuses an entry index above the ceiling and accepts the ceiling", () => {
    refused(st(1, run(1, C + 1, 1)), `entry index ${C + 1}`);
    refused(st(C, [e(C + 1, C)], snap(C, C)), `entry index ${C + 1}`);
    expect(core(st(1, run(1, C, 1))).lastIndex).toBe(C);
  });
  it("refuses decreasing terms, also below the snapshot's term, and accepts equal ones", () => {
    refused(st(3, [e(1, 2), e(2, 1)]), "entry 2 term 1 below 2");
    refused(st(3, [e(6, 2)], snap(5, 3)), "entry 6 term 2 below 3");
    expect(core(st(3, [e(6, 3), e(7, 3)], snap(5, 3))).lastIndex).toBe(7);
  });
  it("refuses an entry term above the stored term and accepts an equal one", () => {
    refused(st(1, [e(1, 1), e(2, 2)]), "entry 2 term 2 above stored term 1");
    expect(core(st(2, [e(1, 1), e(2, 2)])).termAt(2)).toBe(2);
  });
  it("refuses a config entry without a config, and a config on another kind", () => {
    refused(st(1, [e(1, 1), e(2, 1, { kind: "config" })]), "entry 2 config presence");
    refused(st(1, [e(1, 1, { config: ONE })]), "entry 1 config presence");
    refused(st(1, [e(1, 1, { kind: "noop", config: ONE })]), "entry 1 config presence");
    const f = core(st(1, [e(1, 1, { kind: "config", config: { voters: ["f", "g"], learners: [] } })]));
    expect(f.config.voters).toEqual(["f", "g"]);
  });
});

describe("a freshly restored core", () => {
  it("has no work to hand out when nothing is pending", () => {
    const f = core(st(2, [e(1, 1), e(2, 2)]), ["a", "b", "f"]);
    expect(f.hasReady()).toBe(false);
    const rd = f.ready();
    expect(rd).toMatchObject({ hardState: null, storage: [], earlyMessages: [], messages: [], committed: [], outcomes: [] });
    f.advance(rd);
    expect(f.hasReady()).toBe(false);
  });

  it("reports role candidate while pre-voting and while campaigning", () => {
    const f = core(st(2, [e(1, 1), e(2, 2)]), ["a", "b", "f"]);
    expect(f.role).toBe("follower");
    f.tick(raftConfig().electionTimeoutMaxMs);
    expect(f.state).toBe("precandidate");
    expect(f.role).toBe("candidate");
    f.step("a", { type: "preVoteReply", term: 3, granted: true, round: 1 });
    expect(f.state).toBe("candidate");
    expect(f.role).toBe("candidate");
  });
});
