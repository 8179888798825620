// `heddle start` pins its V8 young generation (the soak's RSS steps were V8 resizing it: bench/soak.ts).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { DAEMON_SEMI_SPACE_MIB, pinnedYoungGenerationExecArgv } from "../src/young-generation.ts";
import { heddle, heddleBackground, type Background } from "./support/cli.ts";

const PIN = [`--min-semi-space-size=${DAEMON_SEMI_SPACE_MIB}`, `--max-semi-space-size=${DAEMON_SEMI_SPACE_MIB}`];
const argv = (...args: string[]) => ["/usr/bin/node", "/x/main.ts", ...args];

describe("pinnedYoungGenerationExecArgv", () => {
  it("adds the pinning flags for `start`, before node's own options", () => {
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start", "--config", "c.json"), execArgv: [], nodeOptions: undefined })).toEqual(PIN);
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start"), execArgv: ["--report-on-signal"], nodeOptions: "--enable-source-maps" })).toEqual([...PIN, "--report-on-signal"]);
  });

  it("leaves every other command alone", () => {
    for (const cmd of ["status", "up", "init", "demo", "help", "--start"]) {
      expect(pinnedYoungGenerationExecArgv({ argv: argv(cmd, "start"), execArgv: [], nodeOptions: undefined })).toBeNull();
    }
    expect(pinnedYoungGenerationExecArgv({ argv: argv(), execArgv: [], nodeOptions: undefined })).toBeNull();
  });

  it("does not re-execute twice, and respects a size chosen by whoever launched it", () => {
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start"), execArgv: PIN, nodeOptions: undefined })).toBeNull();
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start"), execArgv: ["--max-semi-space-size=32"], nodeOptions: undefined })).toBeNull();
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start"), execArgv: ["--max_semi_space_size", "32"], nodeOptions: undefined })).toBeNull();
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start"), execArgv: [], nodeOptions: "--inspect --max-semi-space-size=2" })).toBeNull();
    // an option that only starts like one is not one
    expect(pinnedYoungGenerationExecArgv({ argv: argv("start"), execArgv: ["--max-semi-space-sizes-are-fun"], nodeOptions: undefined })).toEqual([...PIN, "--max-semi-space-sizes-are-fun"]);
  });
});

const dir = mkdtempSync(join(tmpdir(), "heddle-young-"));
const started: Background[] = [];
afterAll(() => {
  for (const b of started) if (b.proc.exitCode === null && b.proc.signalCode === null) b.proc.kill("SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe.runIf(process.platform === "linux" && typeof process.execve === "function")("heddle start as an OS process", () => {
  it("runs with the young generation pinned, in the process it was started as, and stops on SIGTERM", async () => {
    const cluster = join(dir, "cluster");
    const init = await heddle(["init", "--peers", "1", "--mode", "static", "--supply", "100", "--tree", "a=1", cluster]);
    expect(init.code, init.err).toBe(0);
    const conf = join(cluster, "peer-1", "heddle.json");
    const peer = heddleBackground(["start", "--config", conf]);
    started.push(peer);
    await peer.waitFor(/heddle peer started/);

    // same pid as spawned (re-executed in place), now with the flags on its command line
    const cmdline = readFileSync(`/proc/${peer.proc.pid}/cmdline`, "utf8").split("\0");
    expect(cmdline).toEqual(expect.arrayContaining(PIN));
    expect(cmdline.filter((a) => a === "start")).toHaveLength(1);

    // V8 reports the young generation within the pinned size (left alone it is 64 MiB once the modules loaded)
    const { api } = JSON.parse(readFileSync(conf, "utf8"));
    const token = readFileSync(join(cluster, "peer-1", "token"), "utf8").trim();
    const metrics = await (await fetch(`http://${api.listen}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
    const newSpace = /^heddle_nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)$/m.exec(metrics);
    expect(newSpace, "new space in /metrics").not.toBeNull();
    expect(Number(newSpace![1])).toBeGreaterThan(0);
    expect(Number(newSpace![1])).toBeLessThanOrEqual(2 * DAEMON_SEMI_SPACE_MIB * 2 ** 20);

    peer.proc.kill("SIGTERM");
    expect(await peer.exited).toBe(0);
  });
});
