import { MemoryNetwork, seededRandom } from "../src/index.ts";
import { VirtualTimers } from "../src/testing.ts";
import { describeSeamConformance } from "./seam-conformance.ts";

describeSeamConformance("MemoryNetwork", async () => {
  const timers = new VirtualTimers();
  const net = new MemoryNetwork({ timers, random: seededRandom(1) });
  const seams = [net.join("peer-a"), net.join("peer-b"), net.join("peer-c", { maxFrameBytes: 4096 })];
  return {
    seams,
    pass: async () => timers.advanceBy(10),
    stop: async () => {
      for (const s of seams) await s.close();
    },
  };
});
