// `heddle init --tree`: a tree whose groups do not all hang from the root through one parent is refused at init,
// naming the group — before, init wrote it and every peer then refused to start ("does not hang from the root"),
// which `heddle up` reported only as "exited (code 8)" (found by a new user's walkthrough).
import { describe, expect, it } from "vitest";
import { parseTreeSpec, TreeSpecError } from "../src/index.ts";

describe("parseTreeSpec", () => {
  it("accepts a tree in any order, every group hanging from the root", () => {
    expect(parseTreeSpec("tenant-a>batch=1,tenant-a=3,tenant-b=1/2", "root").map((e) => `${e.parent}>${e.child}=${e.weight}`)).toEqual(["tenant-a>batch=1", "root>tenant-a=3", "root>tenant-b=1/2"]);
  });
  it.each([
    ["x>b=1", /group "x" \(the parent of "b"\) does not hang from the root "root"; add an item for it, e\.g\. x=1, or write b=1/],
    ["a=1,a>b=1,c>d=1", /group "c" \(the parent of "d"\) does not hang/],
    ["a=1,b>c=1,c>b=1", /does not hang|cycle/],
    ["a=1,b=1,a>c=1,b>c=1", /group "c" two parents \("a" and "b"\)/],
    ["a>root=1", /makes the root "root" a child/],
    // weights a parent's children sum past int64: start would refuse the config, so init does (found by review)
    ["a=9223372036854775807,b=1", /--tree item "root>b=1": .*2\^63 − 1/],
    ["a=1,a>x=4611686018427387904,a>y=4611686018427387904", /--tree item "a>y=4611686018427387904"/],
    ["a=9223372036854775808", /a weight's parts must be 1 … 2\^63 − 1/],
  ])("refuses %s, naming the group", (spec, message) => {
    expect(() => parseTreeSpec(spec, "root")).toThrow(TreeSpecError);
    expect(() => parseTreeSpec(spec, "root")).toThrow(message);
  });
});
