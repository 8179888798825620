// A roster peer outside the Raft membership (issue 17): the daemon's Raft member refuses its frames as `not-member`
// before reading them, so a valid AppendEntries at a higher term moves neither its term nor its leader, and
// /metrics counts it under heddle_raft_frames_refused_total.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { encodeMessage, FRAME_REFUSALS, heddleGoverned, type RaftNode } from "@heddle/governed";
import { memoryStore, MemoryNetwork, realTimers, seededRandom } from "@heddle/node";

import { startGovernedPeer } from "../src/governed-peer.ts";
import { silentLogger } from "../src/log.ts";
import { DaemonMetrics } from "../src/metrics.ts";
import { parsePrometheus } from "./support/prometheus.ts";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const tagged = (tag: number, body: Uint8Array): Uint8Array => new Uint8Array([tag, ...body]);

describe("a governed daemon peer and a roster peer outside the Raft membership", () => {
  it("refuses its Raft frames as not-member, keeps its term and leadership, and exports the count", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-stranger-"));
    const net = new MemoryNetwork({ timers: realTimers, random: seededRandom(1) });
    const seam = net.join("a");
    const stranger = net.join("m");
    const peer = await startGovernedPeer({
      heddleGoverned, seam, self: ReplicaId("a"), storeDir: dir, logger: silentLogger,
      mode: { kind: "governed", root: GroupId("root"), voters: ["a"], learners: [], raft: {} },
      config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers: realTimers, random: seededRandom(2), store: memoryStore() },
    });
    try {
      const raft = peer.raft as RaftNode; // mode.etcd is unset: the embedded member
      for (let i = 0; i < 500 && raft.role.get() !== "leader"; i++) await sleep(10);
      expect(raft.role.get()).toBe("leader");
      const term = peer.term.get();
      // a valid leader frame at a much higher term, and a vote that skips the leader lease
      stranger.send("a", tagged(4, encodeMessage({ type: "append", term: term + 5, prevLogIndex: 0, prevLogTerm: 0, leaderCommit: 0, round: 0, entries: [] })));
      stranger.send("a", tagged(4, encodeMessage({ type: "vote", term: term + 7, lastLogIndex: 1_000, lastLogTerm: term + 6, transfer: true })));
      for (let i = 0; i < 500 && (raft.refusedFrames().get("not-member") ?? 0) < 2; i++) await sleep(10);
      expect(Object.fromEntries(raft.refusedFrames())).toEqual({ "not-member": 2 });
      expect([raft.role.get(), peer.term.get()]).toEqual(["leader", term]);

      const metrics = new DaemonMetrics({ processMetrics: false });
      metrics.attach({
        data: peer.node, mode: "governed", root: GroupId("root"), roster: [{ id: "a", addrs: [] }], connected: () => seam.peers.get(), lastLiveness: () => new Map(), control: peer.control,
        raft: { role: raft.role, leader: raft.leader, commitIndex: raft.commitIndex, membership: raft.membership, term: peer.term, refusedFrames: () => raft.refusedFrames(), subscriberErrors: () => 3 },
      });
      const m = parsePrometheus(await metrics.registry.metrics());
      expect(m.types.get("heddle_raft_frames_refused_total")).toBe("counter");
      expect(m.all("heddle_raft_frames_refused_total").length).toBe(FRAME_REFUSALS.length); // every reason, zeros included
      expect(m.one("heddle_raft_frames_refused_total", { reason: "not-member" })).toBe(2);
      expect(m.one("heddle_raft_frames_refused_total", { reason: "undecodable" })).toBe(0);
      expect(m.types.get("heddle_raft_subscriber_errors_total")).toBe("counter");
      expect(m.one("heddle_raft_subscriber_errors_total", {})).toBe(3); // follows the member's count
      expect(raft.subscriberErrors()).toBe(0);
      metrics.close();
    } finally {
      await peer.close();
      await seam.close();
      await stranger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});
