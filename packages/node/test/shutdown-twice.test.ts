/**
 * `shutdown()` called again while a shutdown is under way (a crash handler and the embedder's own stop, say)
 * resolves only once the store is closed — the store holds its file lock until then, so "stop the other node
 * first" (StoreLockedError's advice) must mean `await node.shutdown()`, from any caller. It used to return at
 * once when it found the node shutting, before the first call reached `store.close()` (review s28 diff #2).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { GroupId, ReplicaId } from "@heddle/ledger";
import { MemoryNetwork, seededRandom } from "@heddle/seam";
import { describe, expect, it } from "vitest";
import { heddleStatic, lane, lowerTopology, sqliteStore } from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";

describe("shutdown() twice", () => {
  it("the second call resolves after the store is closed, so the same path opens again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-shutdown-twice-"));
    try {
      const timers = new VirtualTimers();
      const net = new MemoryNetwork({ timers, random: seededRandom(1) });
      const path = join(dir, "ledger.sqlite");
      const node = heddleStatic({
        seam: net.join("alice"), self: ReplicaId("alice"), root: GroupId("root"), supply: new Map([[ReplicaId("alice"), 100n]]), topology: lowerTopology("root", [lane("team", 1)]),
        config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, random: seededRandom(2), store: sqliteStore(path) },
      });
      timers.advanceBy(10);
      const first = node.shutdown();
      const second = node.shutdown();
      await second;
      const again = sqliteStore(path); // StoreLockedError while the first call has not closed the store
      again.close();
      expect(second).toBe(first); // one stop, awaited by both
      await first;
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
