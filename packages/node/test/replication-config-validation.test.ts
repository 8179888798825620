/**
 * The replication config's validation (node.md §12: "Construction validates every field and throws
 * `RangeError` naming it"), pinned message by message: each field's bounds at the edge, a non-integer,
 * and the defaults themselves (issue 19, mutation survivors of config.ts).
 */
import { describe, expect, it } from "vitest";
import { checkReplicationConfig, MIN_FRAME_BYTES, REPLICATION_DEFAULTS, type ReplicationConfig } from "../src/replication/config.ts";

const POSITIVE = ["antiEntropyIntervalMs", "resendRetryMs", "fullStateRetryMs", "peerEvictionMs", "maxPendingDeltas", "maxTrackedSeqs", "maxResendSpan"] as const;
const NON_NEGATIVE = ["fullStateRetryLimit", "ackDelayMs", "reorderGraceMs", "deltaBatchMs"] as const;

/** The message `checkReplicationConfig` throws for `c`, or "ok". */
function verdict(c: ReplicationConfig): string {
  try {
    expect(checkReplicationConfig(c)).toBe(c);
    return "ok";
  } catch (e) {
    expect(e).toBeInstanceOf(RangeError);
    return (e as Error).message;
  }
}

describe("replication config (node.md §12)", () => {
  it("the defaults are §12's, with anti-entropy on, and pass their own check", () => {
    expect(REPLICATION_DEFAULTS).toEqual({
      antiEntropyIntervalMs: 5_000,
      resendRetryMs: 2_000,
      fullStateRetryMs: 5_000,
      fullStateRetryLimit: 10,
      peerEvictionMs: 300_000,
      maxFrameBytes: 1_048_576,
      maxPendingDeltas: 10_000,
      maxTrackedSeqs: 4_096,
      maxResendSpan: 1_024,
      ackDelayMs: 10,
      reorderGraceMs: 5,
      deltaBatchMs: 0,
      antiEntropy: true,
    });
    expect(Object.isFrozen(REPLICATION_DEFAULTS)).toBe(true);
    expect(verdict(REPLICATION_DEFAULTS)).toBe("ok");
  });

  it("a positive field refuses 0, a negative and a fraction, naming itself; 1 passes", () => {
    for (const k of POSITIVE) {
      const withValue = (v: unknown) => ({ ...REPLICATION_DEFAULTS, [k]: v }) as ReplicationConfig;
      expect(verdict(withValue(0))).toBe(`${k} must be a positive integer, got 0`);
      expect(verdict(withValue(-3))).toBe(`${k} must be a positive integer, got -3`);
      expect(verdict(withValue(1.5))).toBe(`${k} must be a positive integer, got 1.5`);
      expect(verdict(withValue(2 ** 53))).toBe(`${k} must be a positive integer, got ${2 ** 53}`);
      expect(verdict(withValue(Number.NaN))).toBe(`${k} must be a positive integer, got NaN`);
      expect(verdict(withValue(1))).toBe("ok");
    }
  });

  it("a non-negative field refuses a negative and a fraction, naming itself; 0 passes", () => {
    for (const k of NON_NEGATIVE) {
      const withValue = (v: unknown) => ({ ...REPLICATION_DEFAULTS, [k]: v }) as ReplicationConfig;
      expect(verdict(withValue(-1))).toBe(`${k} must be an integer >= 0, got -1`);
      expect(verdict(withValue(0.5))).toBe(`${k} must be an integer >= 0, got 0.5`);
      expect(verdict(withValue("2"))).toBe(`${k} must be an integer >= 0, got 2`);
      expect(verdict(withValue(0))).toBe("ok");
    }
  });

  it(`maxFrameBytes is an integer >= ${MIN_FRAME_BYTES}: 4 095 and a fraction are refused, 4 096 passes`, () => {
    expect(MIN_FRAME_BYTES).toBe(4_096);
    const withFrame = (maxFrameBytes: number) => ({ ...REPLICATION_DEFAULTS, maxFrameBytes });
    expect(verdict(withFrame(4_095))).toBe("maxFrameBytes must be an integer >= 4096, got 4095");
    expect(verdict(withFrame(4_096.5))).toBe("maxFrameBytes must be an integer >= 4096, got 4096.5");
    expect(verdict(withFrame(0))).toBe("maxFrameBytes must be an integer >= 4096, got 0");
    expect(verdict(withFrame(4_096))).toBe("ok");
  });

  it("antiEntropy must be a boolean; false passes", () => {
    expect(verdict({ ...REPLICATION_DEFAULTS, antiEntropy: "yes" as unknown as boolean })).toBe("antiEntropy must be a boolean");
    expect(verdict({ ...REPLICATION_DEFAULTS, antiEntropy: 1 as unknown as boolean })).toBe("antiEntropy must be a boolean");
    expect(verdict({ ...REPLICATION_DEFAULTS, antiEntropy: false })).toBe("ok");
  });
});
