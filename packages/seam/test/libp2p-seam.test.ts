import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { YamuxStream } from "@chainsafe/libp2p-yamux/stream";
import { describe, expect, it } from "vitest";
import { generatePeerKey, libp2pSeam, loadOrCreatePeerKey, peerIdOf, realTimers, seededRandom } from "../src/index.ts";
import { sleep, startLibp2pSeams } from "../src/testing.ts";

async function until(cond: () => boolean, what: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`);
    await sleep(20);
  }
}

describe("libp2p seam", () => {
  it("persists the peer key (mode 0600): the identity survives a restart", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-key-"));
    const path = join(dir, "peer.key");
    const k1 = await loadOrCreatePeerKey(path);
    const k2 = await loadOrCreatePeerKey(path);
    expect(peerIdOf(k1)).toBe(peerIdOf(k2));
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const other = await loadOrCreatePeerKey(join(dir, "other.key"));
    expect(peerIdOf(other)).not.toBe(peerIdOf(k1));
  });

  it("a peer that is not on the roster cannot connect or inject frames", async () => {
    const { seams } = await startLibp2pSeams(2);
    const [a, b] = seams as [typeof seams[0], typeof seams[0]];
    const got: string[] = [];
    a.onFrame((from) => got.push(from));
    const intruderKey = await generatePeerKey();
    const intruder = await libp2pSeam({
      privateKey: intruderKey,
      listen: ["/ip4/127.0.0.1/tcp/0"],
      roster: [{ id: a.self, addrs: a.addrs() }, { id: b.self, addrs: b.addrs() }],
      allowOnlyRoster: false,
      timers: realTimers,
      random: seededRandom(9),
      redialMinMs: 50,
      redialMaxMs: 100,
    });
    try {
      await until(() => a.counters().refused > 0 && b.counters().refused > 0, "gater refusals");
      // The intruder redials every 50–100 ms, and its own side of a connection the gater refuses can read
      // as open for a moment before the close arrives (wider on a loaded machine): what must hold is that no
      // connection lasts, so wait for a moment with none, then check that nothing can be sent over one.
      await until(() => intruder.peers.get().size === 0, "the intruder holds no connection");
      expect(a.peers.get().has(intruder.self)).toBe(false);
      expect(intruder.send(a.self, new Uint8Array([1, 2, 3]))).toBe("not-connected");
      intruder.broadcast(new Uint8Array([1]));
      await sleep(200);
      expect(got).toEqual([]);
      // roster peers still talk to each other
      b.send(a.self, new Uint8Array([4]));
      await until(() => got.length === 1, "roster frame");
      expect(got).toEqual([b.self]);
    } finally {
      await intruder.close();
      for (const s of seams) await s.close();
    }
  });

  it("setBlocked partitions over real sockets and heals; a full queue returns backpressure and signals it", async () => {
    const { seams } = await startLibp2pSeams(2, { maxQueuedFrames: 4 });
    const [a, b] = seams as [typeof seams[0], typeof seams[0]];
    try {
      await until(() => a.peers.get().has(b.self) && b.peers.get().has(a.self), "connected");
      a.setBlocked([b.self]);
      b.setBlocked([a.self]);
      await until(() => !a.peers.get().has(b.self) && !b.peers.get().has(a.self), "blocked");
      await sleep(300);
      expect(a.peers.get().has(b.self)).toBe(false);
      a.setBlocked([]);
      b.setBlocked([]);
      await until(() => a.peers.get().has(b.self) && b.peers.get().has(a.self), "healed");
      const signalled: string[] = [];
      a.onBackpressure((p) => signalled.push(p));
      const results = Array.from({ length: 50 }, () => a.send(b.self, new Uint8Array(1000)));
      expect(results).toContain("backpressure");
      expect(signalled.length).toBe(results.filter((r) => r === "backpressure").length);
      expect(signalled.every((p) => p === b.self)).toBe(true);
    } finally {
      for (const s of seams) await s.close();
    }
  });

  it("a connected roster peer is re-checked every redialMaxMs, not every redialMinMs, and a lost one is redialed at once", async () => {
    const keys = [await generatePeerKey(), await generatePeerKey()];
    const armed: number[] = [];
    const counting = { ...realTimers, set: (fn: () => void, ms: number) => (armed.push(ms), realTimers.set(fn, ms)) };
    const b = await libp2pSeam({ privateKey: keys[1]!, listen: ["/ip4/127.0.0.1/tcp/0"], roster: [{ id: peerIdOf(keys[0]!), addrs: [] }], allowOnlyRoster: true, timers: realTimers, random: seededRandom(2), redialMinMs: 20, redialMaxMs: 5_000 });
    const a = await libp2pSeam({ privateKey: keys[0]!, listen: ["/ip4/127.0.0.1/tcp/0"], roster: [{ id: b.self, addrs: b.addrs() }], allowOnlyRoster: true, timers: counting, random: seededRandom(1), redialMinMs: 20, redialMaxMs: 5_000 });
    try {
      await until(() => a.peers.get().has(b.self), "connected");
      await sleep(100); // the dial's own follow-up check (redialMinMs after it) comes and goes
      armed.length = 0;
      await sleep(400);
      // before: a check every 20 ms (±20 %), some 20 timers in 400 ms; now none until redialMaxMs
      expect(armed.filter((ms) => ms < 5_000 * 0.8)).toEqual([]);
      // a dropped connection is still redialed at once
      a.setBlocked([b.self]);
      await until(() => !a.peers.get().has(b.self), "blocked");
      a.setBlocked([]);
      await until(() => a.peers.get().has(b.self), "reconnected");
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("a restarted peer with the same key rejoins under the same id", async () => {
    const { seams, keys } = await startLibp2pSeams(2);
    const [a, b] = seams as [typeof seams[0], typeof seams[0]];
    try {
      await until(() => a.peers.get().has(b.self), "connected");
      const bId = b.self;
      await b.close();
      await until(() => !a.peers.get().has(bId), "b left");
      const b2 = await libp2pSeam({
        privateKey: keys[1]!,
        listen: ["/ip4/127.0.0.1/tcp/0"],
        roster: [{ id: a.self, addrs: a.addrs() }],
        allowOnlyRoster: true,
        timers: realTimers,
        random: seededRandom(5),
        redialMinMs: 50,
        redialMaxMs: 200,
      });
      seams[1] = b2;
      expect(b2.self).toBe(bId);
      await until(() => a.peers.get().has(bId) && b2.peers.get().has(a.self), "b rejoined");
      const got: string[] = [];
      b2.onFrame((from, f) => got.push(`${from === a.self}:${f[0]}`));
      a.send(bId, new Uint8Array([42]));
      await until(() => got.length === 1, "frame after restart");
      expect(got).toEqual(["true:42"]);
    } finally {
      for (const s of seams) await s.close();
    }
  });
  it("an inbound frame above maxFrameBytes aborts only that stream, is counted, and the seam keeps working", async () => {
    const { seams } = await startLibp2pSeams(2, { maxFrameBytes: (i) => (i === 1 ? 4096 : 1 << 20) });
    const [a, b] = seams as [typeof seams[0], typeof seams[0]];
    const got: number[] = [];
    b.onFrame((_from, f) => got.push(f.length));
    try {
      await until(() => a.peers.get().has(b.self) && b.peers.get().has(a.self), "connected");
      expect(a.send(b.self, new Uint8Array(5000))).toBe("queued");
      await until(() => b.counters().oversize === 1, "oversize counted by libp2p's length-prefix decoder");
      expect(got).toEqual([]);
      await until(() => {
        if (got.length === 0) a.send(b.self, new Uint8Array(10));
        return got.length > 0;
      }, "a small frame after the aborted stream");
      expect(got.every((n) => n === 10)).toBe(true);
    } finally {
      for (const s of seams) await s.close();
    }
  });

  it("a frame whose stream.send throws is counted as a send error, and the next frames go on a new stream", async () => {
    // The write side of an outbound stream can close between the seam's status check and its write; the frame was
    // then lost without a trace. The throw is forced here on the one stream object's class (the seam writes only
    // on its outbound streams), once.
    const { seams } = await startLibp2pSeams(2);
    const [a, b] = seams as [typeof seams[0], typeof seams[0]];
    const got: number[] = [];
    b.onFrame((_from, f) => got.push(f[0]!));
    const send = Object.getOwnPropertyDescriptor(YamuxStream.prototype, "send");
    try {
      await until(() => a.peers.get().has(b.self) && b.peers.get().has(a.self), "connected");
      expect(a.send(b.self, new Uint8Array([1]))).toBe("queued");
      await until(() => got.length === 1, "the first frame");
      let armed = true;
      const inherited = Object.getPrototypeOf(YamuxStream.prototype).send as (this: unknown, data: Uint8Array) => boolean;
      Object.defineProperty(YamuxStream.prototype, "send", {
        configurable: true,
        writable: true,
        value(this: unknown, data: Uint8Array): boolean {
          if (armed) {
            armed = false;
            throw new Error("Cannot write to a stream that is closing");
          }
          return inherited.call(this, data);
        },
      });
      expect(a.send(b.self, new Uint8Array([2]))).toBe("queued");
      expect(armed).toBe(false);
      expect(a.counters().sendErrors).toBe(1);
      expect(a.send(b.self, new Uint8Array([3]))).toBe("queued");
      await until(() => got.length === 2, "the frame after the failed write");
      expect(got).toEqual([1, 3]);
      expect(a.counters()).toMatchObject({ sendErrors: 1, framesOut: 2 });
    } finally {
      if (send === undefined) delete (YamuxStream.prototype as { send?: unknown }).send;
      else Object.defineProperty(YamuxStream.prototype, "send", send);
      for (const s of seams) await s.close();
    }
  });

  it("frames still queued when their peer disconnects are counted as discarded", async () => {
    const { seams } = await startLibp2pSeams(2);
    const [a, b] = seams as [typeof seams[0], typeof seams[0]];
    try {
      await until(() => a.peers.get().has(b.self) && b.peers.get().has(a.self), "connected");
      // one synchronous burst: the stream to b is still being opened, so the frames wait in a's queue; then the cut
      const queued = Array.from({ length: 20 }, () => a.send(b.self, new Uint8Array(100))).filter((r) => r === "queued").length;
      a.setBlocked([b.self]);
      const { framesOut, discarded } = a.counters();
      expect(framesOut + discarded).toBe(queued);
      expect(discarded).toBeGreaterThan(0);
    } finally {
      for (const s of seams) await s.close();
    }
  });
});
