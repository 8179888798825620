import { describe, expect, it } from "vitest";
import { DEMO_LIMITS, DemoUsageError, parseDemoArgs } from "../src/index.ts";

describe("heddle demo options", () => {
  it("has the documented defaults", () => {
    expect(parseDemoArgs([], false)).toEqual({
      peers: 4,
      durationS: 60,
      seed: 1,
      tenantWeights: [3n, 1n],
      laneWeights: [1n, 1n],
      dir: undefined,
      live: false,
      governed: false,
      reshapeWeights: undefined,
      dashboardPort: 0,
    });
    expect(parseDemoArgs([], true)).toMatchObject({ live: true });
    expect(parseDemoArgs(["--dashboard-port", "7300"], false)).toMatchObject({ dashboardPort: 7300 });
    expect(parseDemoArgs(["--no-dashboard"], false)).toMatchObject({ dashboardPort: null });
    expect(() => parseDemoArgs(["--dashboard-port", "70000"], false)).toThrow(DemoUsageError);
  });

  it("parses every option, in both --flag value and --flag=value forms", () => {
    expect(parseDemoArgs(["--peers", "5", "--duration=30", "--seed", "9", "--weights", "2:1", "--lane-weights=3:1", "--dir", "/tmp/x", "--no-live"], true)).toEqual({
      peers: 5,
      durationS: 30,
      seed: 9,
      tenantWeights: [2n, 1n],
      laneWeights: [3n, 1n],
      dir: "/tmp/x",
      live: false,
      governed: false,
      reshapeWeights: undefined,
      dashboardPort: 0,
    });
  });

  it("--governed reshapes to the reversed tenant weights unless --reshape-weights says otherwise", () => {
    expect(parseDemoArgs(["--governed", "--weights", "3:1"], false)).toMatchObject({ governed: true, reshapeWeights: [1n, 3n] });
    expect(parseDemoArgs(["--governed", "--reshape-weights=2:5"], false)).toMatchObject({ governed: true, tenantWeights: [3n, 1n], reshapeWeights: [2n, 5n] });
  });

  it("answers help", () => {
    expect(parseDemoArgs(["--help"], false)).toBe("help");
    expect(parseDemoArgs(["-h"], false)).toBe("help");
  });

  it.each([
    [["--peers", "2"]],
    [["--peers", String(DEMO_LIMITS.maxPeers + 1)]],
    [["--peers", "four"]],
    [["--duration", "5"]],
    [["--weights", "3"]],
    [["--weights", "0:1"]],
    [["--lane-weights", "1:-1"]],
    [["--dir"]],
    [["--bogus"]],
    [["--reshape-weights", "1:3"]],
    [["--governed", "--weights", "2:2"]],
    [["--governed", "--reshape-weights", "3:1"]],
  ])("rejects %j with a usage error", (argv) => {
    expect(() => parseDemoArgs(argv, false)).toThrow(DemoUsageError);
  });
});
