// mode.raft reaches the embedded Raft member under its own names (the config's heartbeatIntervalMs is Raft's
// heartbeatMs), and timings the member would refuse are a ConfigError naming the key, raised before any store opens.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { heddleGoverned, RaftConfigError, type RaftStorage } from "@heddle/governed";
import { memoryStore, MemoryNetwork, realTimers, seededRandom } from "@heddle/node";
import { ConfigError, silentLogger, type GovernedMode } from "../src/index.ts";
import { startGovernedPeer } from "../src/governed-peer.ts";
import { governedSoloDaemon, soloDaemon } from "./support/embedded.ts";

const withRaft = (raft: GovernedMode["raft"]) => (c: Parameters<NonNullable<Parameters<typeof soloDaemon>[1]>>[0]) => ({ ...c, mode: { ...(c.mode as GovernedMode), raft } });

describe("daemon: mode.raft timings", () => {
  it("starts with a heartbeat below a short election timeout (heartbeatIntervalMs is handed to Raft as heartbeatMs)", async () => {
    // Before: heartbeatIntervalMs was dropped, Raft kept its 50 ms heartbeat, and the start failed with
    // DaemonStartError "store": "heartbeatMs (50) must be < electionTimeoutMinMs (40)".
    const s = await governedSoloDaemon({ config: withRaft({ heartbeatIntervalMs: 20, electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 }) });
    try {
      expect(((await s.client.status()) as { control: { isWritable: boolean } }).control.isWritable).toBe(true);
    } finally {
      await s.close();
    }
  }, 30_000);

  it("refuses timings the Raft member would refuse as a ConfigError naming mode.raft.<key>, leaving no Raft log store open", async () => {
    const opened: string[] = [];
    const wrapRaftLog = (inner: RaftStorage): RaftStorage => {
      opened.push("open");
      return { ...inner, close: async () => (opened.push("close"), inner.close()) };
    };
    for (const [raft, field] of [
      [{ electionTimeoutMinMs: 80, electionTimeoutMaxMs: 80 }, "mode.raft.electionTimeoutMaxMs"],
      [{ heartbeatIntervalMs: 60, electionTimeoutMinMs: 40, electionTimeoutMaxMs: 80 }, "mode.raft.heartbeatIntervalMs"],
    ] as const) {
      let err: unknown;
      try {
        const s = await soloDaemon({ mode: "governed" }, withRaft(raft), { wrapRaftLog });
        await s.close();
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as ConfigError).issues.map((i) => i.field)).toEqual([field]);
    }
    expect(opened.filter((x) => x === "open").length).toBe(opened.filter((x) => x === "close").length);
  }, 30_000);

  it("startGovernedPeer: timings the Raft member refuses fail before the Raft log store is opened", async () => {
    // Before: the store was opened, then raftNode threw, and nothing closed the store.
    const dir = mkdtempSync(join(tmpdir(), "heddle-raft-timing-"));
    const net = new MemoryNetwork({ timers: realTimers, random: seededRandom(1) });
    const events: string[] = [];
    try {
      const err = await startGovernedPeer({
        heddleGoverned, seam: net.join("a"), self: ReplicaId("a"), storeDir: dir, logger: silentLogger,
        mode: { kind: "governed", root: GroupId("root"), voters: ["a"], learners: [], raft: { electionTimeoutMinMs: 80, electionTimeoutMaxMs: 80 } },
        config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers: realTimers, random: seededRandom(2), store: memoryStore() },
        wrapRaftLog: (inner) => (events.push("open"), { ...inner, close: async () => (events.push("close"), inner.close()) }),
      }).then(
        async (p) => (await p.close(), null),
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(RaftConfigError);
      expect(events).toEqual([]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
