// How the dashboard colours an edge's bar (dashboard-snapshot.ts `shareTone`): by how far its share of committed
// service is from its fair share — but only while it demands service (node.md §11 measures deviation among the
// children demanding now): a child that wants nothing is not being treated unfairly, whatever its share.
import { describe, expect, it } from "vitest";
import { shareTone } from "../src/dashboard-snapshot.ts";

describe("shareTone", () => {
  it("draws a child without demand neutrally, however far its share is from its weight's (found in review: red)", () => {
    expect(shareTone(0.25, 0, false)).toBe("idle");
    expect(shareTone(0.25, 0.9, false)).toBe("idle");
    expect(shareTone(0.5, 0.5, false)).toBe("idle");
  });
  it("grades a demanding child by the distance between the shares: 2 points ok, 10 warn, further bad", () => {
    expect(shareTone(0.25, 0.26, true)).toBe("ok");
    expect(shareTone(0.25, 0.2, true)).toBe("warn");
    expect(shareTone(0.25, 0.36, true)).toBe("bad");
    expect(shareTone(0.25, 0, true)).toBe("bad");
  });
  it("grades as before where demand is not known (null), and draws nothing to compare neutrally", () => {
    expect(shareTone(0.25, 0, null)).toBe("bad");
    expect(shareTone(0.25, 0.25, null)).toBe("ok");
    expect(shareTone(null, 0.5, true)).toBe("idle");
    expect(shareTone(0.5, null, true)).toBe("idle");
  });
});
