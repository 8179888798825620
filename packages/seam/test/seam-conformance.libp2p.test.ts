import { describeSeamConformance } from "./seam-conformance.ts";
import { sleep, startLibp2pSeams } from "../src/testing.ts";

describeSeamConformance("libp2p on 127.0.0.1", async () => {
  const { seams } = await startLibp2pSeams(3, { maxFrameBytes: (i) => (i === 2 ? 4096 : 1 << 20) });
  return {
    seams,
    pass: () => sleep(25),
    stop: async () => {
      for (const s of seams) await s.close();
    },
  };
});
