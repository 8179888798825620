/**
 * Raft config validation (governed.md §4.1 table, R-E8): every integer limit is checked for being a safe integer
 * inside its range, bounds included, and the error names the field, the range and the value it got.
 */
import { describe, expect, it } from "vitest";
import { RaftConfigError, raftConfig } from "../src/index.ts";

const MAX = Number.MAX_SAFE_INTEGER;

describe("raftConfig range checks", () => {
  it("refuses a non-integer or non-number inside the range, naming field, range and value", () => {
    expect(() => raftConfig({ maxEntriesPerMessage: 1.5 })).toThrow(
      new RaftConfigError(`maxEntriesPerMessage must be an integer in [1, ${MAX}], got 1.5`),
    );
    expect(() => raftConfig({ maxApplyBatch: Number.NaN })).toThrow(new RaftConfigError(`maxApplyBatch must be an integer in [1, ${MAX}], got NaN`));
  });

  it("refuses a safe integer below the minimum and accepts the minimum", () => {
    expect(() => raftConfig({ maxEntriesPerMessage: 0 })).toThrow(new RaftConfigError(`maxEntriesPerMessage must be an integer in [1, ${MAX}], got 0`));
    expect(() => raftConfig({ maxMessageBytes: 255 })).toThrow(new RaftConfigError(`maxMessageBytes must be an integer in [256, ${MAX}], got 255`));
    expect(raftConfig({ maxMessageBytes: 256 }).maxMessageBytes).toBe(256);
    expect(raftConfig({ maxDedupKeys: 0 }).maxDedupKeys).toBe(0);
  });

  it("accepts the maximum itself and refuses one above it", () => {
    expect(raftConfig({ maxTermJump: 2 ** 20 }).maxTermJump).toBe(2 ** 20);
    expect(() => raftConfig({ maxTermJump: 2 ** 20 + 1 })).toThrow(new RaftConfigError(`maxTermJump must be an integer in [1, ${2 ** 20}], got ${2 ** 20 + 1}`));
    expect(raftConfig({ maxDedupKeys: 1 << 20 }).maxDedupKeys).toBe(1 << 20);
    expect(() => raftConfig({ maxDedupKeys: (1 << 20) + 1 })).toThrow(RaftConfigError);
  });

  it("keeps termCeiling far enough below 2^53 that term and index increments stay exact", () => {
    const top = MAX - 2 ** 21;
    expect(raftConfig({ termCeiling: top }).termCeiling).toBe(top);
    expect(() => raftConfig({ termCeiling: top + 1 })).toThrow(new RaftConfigError(`termCeiling must be an integer in [1, ${top}], got ${top + 1}`));
  });
});

describe("raftConfig ordering checks name both values", () => {
  it("election timeout range must be non-empty", () => {
    expect(() => raftConfig({ electionTimeoutMinMs: 300, electionTimeoutMaxMs: 300 })).toThrow(
      new RaftConfigError("electionTimeoutMinMs (300) must be < electionTimeoutMaxMs (300)"),
    );
  });

  it("heartbeat must be below the minimum election timeout", () => {
    expect(() => raftConfig({ heartbeatMs: 150 })).toThrow(new RaftConfigError("heartbeatMs (150) must be < electionTimeoutMinMs (150)"));
    expect(raftConfig({ heartbeatMs: 149, commitNoticeMs: 5 }).heartbeatMs).toBe(149);
  });
});
