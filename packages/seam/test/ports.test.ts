/** Ports for listen addresses bound later: picked outside the kernel's ephemeral range. */
import { describe, expect, it } from "vitest";
import { ephemeralPortRange, freeListenPort, listenPortRange } from "../src/index.ts";

describe("listen ports picked outside the ephemeral range", () => {
  it("read the ephemeral range from Linux's setting, else the IANA one, and leave it out", () => {
    expect(ephemeralPortRange(() => "32768\t60999\n")).toEqual([32_768, 60_999]);
    expect(ephemeralPortRange(() => "nonsense")).toEqual([49_152, 65_535]);
    expect(ephemeralPortRange(() => "5000 70000")).toEqual([49_152, 65_535]);
    expect(
      ephemeralPortRange(() => {
        throw new Error("ENOENT");
      }),
    ).toEqual([49_152, 65_535]);
    expect(listenPortRange([32_768, 60_999])).toEqual([10_000, 32_767]);
    expect(listenPortRange([49_152, 65_535])).toEqual([10_000, 49_151]);
    expect(listenPortRange([1_024, 40_000])).toEqual([40_001, 65_535]);
    expect(listenPortRange([1_024, 65_535])).toBeNull(); // no room: the kernel picks, as before
  });

  it("are free, outside the range, and never one already taken", async () => {
    const [lo, hi] = ephemeralPortRange();
    const taken = new Set<number>();
    for (let i = 0; i < 20; i++) {
      const p = await freeListenPort(taken);
      expect(p < lo || p > hi, `port ${p} inside ${lo}–${hi}`).toBe(true);
    }
    expect(taken.size).toBe(20);
  });
});
