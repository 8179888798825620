/**
 * The live half of issue 17's frame fuzzers (`fuzz-frames.test.ts` here, `fuzz-raft-frames.test.ts` in
 * `@heddle/governed`): the hostile peer's send loop over real libp2p streams, a tap that counts what the victim's
 * seam delivers from it, and the heap reading after forced collections.
 */
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { peerKeyFromSeed, sleep, startLibp2pSeams, startRawFramePeer, type RawFramePeer, type RawFrameStream } from "@heddle/seam/testing";
import type { Libp2pSeam, Seam } from "../../src/index.ts";
import { Tally, type FrameFuzzer, type Shot } from "./frame-fuzz.ts";

setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

/** `heapUsed` after two forced full collections. */
export function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Waits (polling every 20 ms) until `cond()` holds; throws naming `what` and the seed after `ms`. */
export async function until(cond: () => boolean, what: string, seed: number, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what} (seed ${seed})`);
    await sleep(20);
  }
}

/** Counts the frames `peer` gets through to whoever subscribes to `seam` (a transparent wrapper). */
export function tap(seam: Seam, peer: () => string): { seam: Seam; count: () => number } {
  let n = 0;
  return {
    seam: {
      get self() { return seam.self; },
      get maxFrameBytes() { return seam.maxFrameBytes; },
      get peers() { return seam.peers; },
      send: (to, f) => seam.send(to, f),
      broadcast: (f) => seam.broadcast(f),
      onFrame: (fn) => seam.onFrame((from, f) => {
        if (from === peer()) n++;
        fn(from, f);
      }),
      onBackpressure: (fn) => seam.onBackpressure(fn),
      close: () => seam.close(),
    },
    count: () => n,
  };
}

/** What a `HostilePeer` writes with and to. */
export interface HostilePeerOptions {
  readonly fuzzer: FrameFuzzer;
  readonly mallory: RawFramePeer;
  /** The victim's listen address (a multiaddr with its peer id). */
  readonly addr: string;
  readonly victim: Libp2pSeam;
  /** Frames from the hostile peer the victim's seam delivered so far (`tap`). */
  readonly delivered: () => number;
  readonly seed: number;
  /**
   * Frames between two yields to the event loop (default 2,000, then a 1 ms sleep). The victim, the honest peers
   * and the hostile peer share one process: a smaller value (a `setImmediate` turn) lets timers and I/O — Raft
   * heartbeats, honest work — interleave with the hostile frames instead of waiting for a pause.
   */
  readonly yieldEvery?: number;
}

/**
 * The hostile peer's writer: shots of well-formed frames are batched onto one long-lived stream, stream-level
 * attacks each get a fresh stream (closed afterwards, not awaited: its end is counted whenever it comes). Every
 * write waits for the stream to drain, so nothing is dropped on the way; `tally` predicts what the victim counts.
 */
export class HostilePeer {
  readonly tally = new Tally();
  /** Stream opens that timed out and were retried (a failed open wrote nothing). */
  openRetries = 0;
  readonly #o: HostilePeerOptions;
  #shared: RawFrameStream | null = null;

  constructor(o: HostilePeerOptions) {
    this.#o = o;
  }

  /** Runs one step, naming it (and where the run was) if it fails. */
  async #step<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (err) {
      const v = this.#o.victim;
      throw new Error(`hostile peer: ${what} failed after ${this.tally.delivered} frames (victim got ${this.#o.delivered()}, connected: ${v.peers.get().has(this.#o.mallory.self)}, seam ${JSON.stringify(v.counters())}): ${String(err)}`);
    }
  }

  /** Opens the shared stream and waits until the victim sees the hostile peer. */
  async connect(): Promise<void> {
    this.#shared = await this.#o.mallory.open(this.#o.addr);
    await until(() => this.#o.victim.peers.get().has(this.#o.mallory.self), "hostile peer connected", this.#o.seed);
  }

  /** Sends shots until `limit` frames are predicted delivered, then waits until the victim received them all. */
  async send(limit: number, progress: (delivered: number) => void = () => {}): Promise<void> {
    const shared = this.#shared;
    if (shared === null) throw new Error("HostilePeer.send before connect");
    const tally = this.tally;
    let batch: Uint8Array[] = [];
    let size = 0;
    const every = this.#o.yieldEvery;
    let nextYield = tally.delivered + (every ?? 0);
    const flush = async () => {
      if (size === 0) return;
      const bytes = new Uint8Array(size);
      let at = 0;
      for (const b of batch) {
        bytes.set(b, at);
        at += b.length;
      }
      batch = [];
      size = 0;
      await this.#step("write to the shared stream", () => shared.write(bytes));
    };
    while (tally.delivered < limit) {
      const shot: Shot = this.#o.fuzzer.next();
      tally.add(shot);
      if (shot.stream === "shared") {
        batch.push(shot.bytes);
        size += shot.bytes.length;
        if (size >= 16_384) await flush();
      } else {
        await flush();
        // Opening a stream can time out on a loaded machine; a failed open wrote nothing, so it is simply retried.
        const s = await this.#step(`open a stream for ${shot.family}`, async () => {
          for (let attempt = 0; ; attempt++) {
            try {
              return await this.#o.mallory.open(this.#o.addr);
            } catch (err) {
              if (attempt >= 5) throw err;
              this.openRetries++;
            }
          }
        });
        await this.#step(`write ${shot.family}`, () => s.write(shot.bytes));
        void s.close().catch(() => {});
      }
      progress(tally.delivered);
      // let the victim and the honest peers run between batches
      if (every === undefined) {
        if (tally.delivered % 2_000 < 9) await sleep(1);
      } else if (tally.delivered >= nextYield) {
        nextYield = tally.delivered + every;
        await new Promise((r) => setImmediate(r));
      }
    }
    await flush();
    await until(() => this.#o.delivered() === tally.delivered, `victim received ${tally.delivered} frames (has ${this.#o.delivered()})`, this.#o.seed, 120_000);
  }
}

/**
 * The fuzzers' cast over libp2p on 127.0.0.1: three honest seams (the first is the victim) and Mallory, a raw frames
 * peer on the victim's roster, with keys derived from `seed` (peer ids are inside frames, so the same seed replays the
 * same bytes). `tapped.seam` is the victim's seam as its node should see it: it counts what Mallory delivers.
 */
export async function startFuzzCast(seed: number, maxFrameBytes: number): Promise<{ seams: Libp2pSeam[]; victimSeam: Libp2pSeam; mallory: RawFramePeer; tapped: ReturnType<typeof tap> }> {
  const keys = await Promise.all([0, 1, 2, 3].map((k) => peerKeyFromSeed(seed * 10 + k)));
  const { seams } = await startLibp2pSeams(3, { maxFrameBytes: () => maxFrameBytes, keys: keys.slice(0, 3) });
  const victimSeam = seams[0]! as Libp2pSeam;
  const mallory = await startRawFramePeer(keys[3]);
  victimSeam.addRosterEntry({ id: mallory.self, addrs: [] });
  const tapped = tap(victimSeam, () => mallory.self);
  return { seams: seams as Libp2pSeam[], victimSeam, mallory, tapped };
}
