// Regression (issue 17, crash trials): a voter's event loop starved for good when a peer it was streaming to was
// SIGKILLed. The seam's outbound pump looped "writableNeedsDrain → await stream.onDrain() → pump", and libp2p's
// stream class hands out, after a stream's first drain, an already-resolved onDrain promise: the loop ran on
// microtasks forever (found with the trial harness's inspector pause: the JS thread sat in libp2p-seam.ts' pump).
// These tests run the stream class libp2p itself runs on (@libp2p/utils' AbstractMessageStream, loaded from
// where libp2p resolves it, so it is the exact version we ship).
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { StreamGoneError, whenWritable, type DrainableStream } from "../src/drain.ts";

const fromLibp2p = createRequire(createRequire(import.meta.url).resolve("libp2p"));
const utils = (await import(pathToFileURL(fromLibp2p.resolve("@libp2p/utils")).href)) as {
  AbstractMessageStream: new (init: { log: unknown }) => DrainableStream & {
    onDrain(): Promise<void>;
    onMuxerNeedsDrain(): void;
    onMuxerDrain(): void;
    abort(e: Error): void;
  };
};

const noop = () => {};
const log = Object.assign(noop, { enabled: false, trace: noop, error: noop, newScope: () => log });

/** A libp2p message stream whose muxer we drive by hand: full (needs a drain) or drained. */
function stream() {
  class Manual extends utils.AbstractMessageStream {
    sendData(d: { byteLength: number }) {
      return { sentBytes: d.byteLength, canSendMore: true };
    }
    sendReset() {}
    sendPause() {}
    sendResume() {}
    async close() {}
  }
  return new Manual({ log });
}

/** "settled" if `p` settles before a macrotask runs, else "pending" (a resolved promise settles in microtasks). */
async function settlesAtOnce(p: Promise<unknown>): Promise<"settled" | "pending"> {
  return Promise.race([p.then(() => "settled" as const, () => "settled" as const), new Promise<"pending">((r) => setTimeout(() => r("pending"), 0))]);
}

describe("whenWritable: waiting for a libp2p stream to drain (issue 17)", () => {
  it("the stream class libp2p runs on hands out a settled onDrain() on the second backpressure episode (why whenWritable exists)", async () => {
    const s = stream();
    s.onMuxerNeedsDrain();
    const first = s.onDrain();
    expect(await settlesAtOnce(first)).toBe("pending");
    s.onMuxerDrain();
    await first;
    // full again: a correct onDrain() would wait for the next drain event — this one does not
    s.onMuxerNeedsDrain();
    expect(s.writableNeedsDrain).toBe(true);
    expect(await settlesAtOnce(s.onDrain())).toBe("settled");
    expect(s.writableNeedsDrain).toBe(true);
  });

  it("waits for the next drain event on every backpressure episode, not for an earlier one", async () => {
    const s = stream();
    for (let episode = 0; episode < 3; episode++) {
      s.onMuxerNeedsDrain();
      const w = whenWritable(s);
      expect(await settlesAtOnce(w), `episode ${episode}`).toBe("pending");
      s.onMuxerDrain();
      await w;
      expect(s.writableNeedsDrain).toBe(false);
    }
  });

  it("a pump built on it yields to the event loop while the stream stays full (the starved-loop shape)", async () => {
    const s = stream();
    // a stream that was full and drained once before (anyone's onDrain() during that episode leaves its promise)
    s.onMuxerNeedsDrain();
    const first = s.onDrain();
    s.onMuxerDrain();
    await first;
    s.onMuxerNeedsDrain(); // the second episode, which never drains (the remote was killed)
    let spins = 0;
    let stop = false;
    const pump = async () => {
      while (!stop && s.writableNeedsDrain && spins < 10_000) {
        spins++;
        await whenWritable(s).catch(() => {});
      }
    };
    void pump();
    // a timer must fire meanwhile: with onDrain() in place of whenWritable the loop only stops at its 10,000-spin cap
    await new Promise((r) => setTimeout(r, 20));
    expect(spins).toBe(1);
    stop = true;
    s.onMuxerDrain();
  });

  it("rejects when the stream closes before it drains, and at once on a stream that is not open", async () => {
    const s = stream();
    s.onMuxerNeedsDrain();
    const w = whenWritable(s);
    s.abort(new Error("the remote was killed"));
    await expect(w).rejects.toBeInstanceOf(StreamGoneError);
    await expect(whenWritable(s)).rejects.toThrow(/aborted/);
  });

  it("resolves at once when the stream does not need a drain", async () => {
    expect(await settlesAtOnce(whenWritable(stream()))).toBe("settled");
  });
});
