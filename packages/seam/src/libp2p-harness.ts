import { generatePeerKey, libp2pSeam, peerIdOf, realTimers, seededRandom, type Libp2pSeam } from "./index.ts";
import type { PrivateKey } from "@libp2p/interface";

/** Real-time pause. */
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Starts `n` libp2p seams on 127.0.0.1, each dialing the ones started before it. */
export async function startLibp2pSeams(
  n: number,
  opts: { maxFrameBytes?: (i: number) => number; keys?: PrivateKey[]; allowOnlyRoster?: boolean; maxQueuedFrames?: number } = {},
): Promise<{ seams: Libp2pSeam[]; keys: PrivateKey[] }> {
  const keys = opts.keys ?? (await Promise.all(Array.from({ length: n }, () => generatePeerKey())));
  const ids = keys.map(peerIdOf);
  const seams: Libp2pSeam[] = [];
  for (let i = 0; i < n; i++) {
    const roster = ids.map((id, j) => ({ id, addrs: j < i ? seams[j]!.addrs() : [] }));
    seams.push(
      await libp2pSeam({
        privateKey: keys[i]!,
        listen: ["/ip4/127.0.0.1/tcp/0"],
        roster,
        allowOnlyRoster: opts.allowOnlyRoster ?? true,
        timers: realTimers,
        random: seededRandom(1000 + i),
        redialMinMs: 100,
        redialMaxMs: 1000,
        ...(opts.maxFrameBytes ? { maxFrameBytes: opts.maxFrameBytes(i) } : {}),
        ...(opts.maxQueuedFrames ? { maxQueuedFrames: opts.maxQueuedFrames } : {}),
      }),
    );
  }
  // Every seam learns every address, so any of them can redial any other after a restart.
  for (const s of seams) for (const o of seams) if (o !== s) s.addRosterEntry({ id: o.self, addrs: o.addrs() });
  return { seams, keys };
}
