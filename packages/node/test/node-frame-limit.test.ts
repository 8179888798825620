// node.md §12: the node's effective maxFrameBytes — min(HeddleConfig.maxFrameBytes, its channel's) — is at least 4 096.
// The config's own field was checked; a seam with a smaller limit was not, and one under ~300 bytes failed deep in
// the replication core with "a ledger value budget of … bytes leaves no room", naming neither field nor fix.
import { describe, expect, it } from "vitest";
import { Cluster } from "./node-sim.ts";

describe("the seam's frame limit (node.md §12: the effective maxFrameBytes is at least 4 096)", () => {
  it("a seam whose channels carry under 4 096 bytes is refused with a RangeError naming seam.maxFrameBytes and the size to give it", () => {
    expect(() => new Cluster({ seed: 1, supply: { a: 100n, b: 100n }, maxFrameBytes: 4_096 })).toThrow(
      new RangeError(
        "seam.maxFrameBytes is 4096: the node's channels would carry frames of at most 4095 bytes (one is the channel tag), " +
          "under node.md §12's minimum of 4096; give the seam a maxFrameBytes of at least 4097",
      ),
    );
    // before: a seam of 300 bytes failed inside the replication core with a message naming no field
    expect(() => new Cluster({ seed: 1, supply: { a: 100n, b: 100n }, maxFrameBytes: 300 })).toThrow(/^seam\.maxFrameBytes is 300: .* at least 4097$/);
    const c = new Cluster({ seed: 1, supply: { a: 100n, b: 100n }, maxFrameBytes: 4_097 });
    c.settle();
    void c.shutdown();
  });
});
