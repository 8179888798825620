import { createServer, connect, type Socket } from "node:net";
import { once } from "node:events";
import { Uint8ArrayList } from "uint8arraylist";
import { StreamState, YamuxStream } from "@chainsafe/libp2p-yamux/stream";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { coalesceWrites, halfWindowUpdates, quietLengthDecoder } from "../src/coalesced-writes.ts";
import { sleep, startLibp2pSeams } from "../src/testing.ts";

const WINDOW = 256 * 1024; // yamux 8's initial stream window
const HEADER = 12;
const DATA = 0; // yamux frame types
const WINDOW_UPDATE = 1;
const ACK = 2; // yamux flag

const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
});

/** A connected loopback pair: `[writer, reader]`. */
async function socketPair(): Promise<[Socket, Socket]> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as { port: number }).port;
  const accepted = once(server, "connection") as Promise<[Socket]>;
  const writer = connect(port, "127.0.0.1");
  writer.setNoDelay(true);
  await once(writer, "connect");
  const [reader] = await accepted;
  server.close();
  sockets.push(writer, reader);
  return [writer, reader];
}

/** Counts the batches the socket hands to its handle: one `_write` or one `_writev` is one syscall. */
function countFlushes(socket: Socket): { flushes: number[] } {
  const seen = { flushes: [] as number[] };
  const s = socket as Socket & { _write: Function; _writev: Function };
  const write = s._write.bind(socket);
  const writev = s._writev.bind(socket);
  s._write = (chunk: unknown, enc: unknown, cb: unknown) => {
    seen.flushes.push(1);
    return write(chunk, enc, cb);
  };
  s._writev = (chunks: unknown[], cb: unknown) => {
    seen.flushes.push(chunks.length);
    return writev(chunks, cb);
  };
  return seen;
}

async function readAll(socket: Socket, bytes: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  let got = 0;
  while (got < bytes) {
    const [chunk] = (await once(socket, "data")) as [Buffer];
    parts.push(chunk);
    got += chunk.length;
  }
  return Buffer.concat(parts);
}

type SendData = (data: Uint8ArrayList) => { sentBytes: number; canSendMore: boolean };

/** A stand-in for `@libp2p/tcp`'s connection: the socket, and a `sendData` that coalesceWrites replaces. */
function tcpConnection(socket: Socket): { socket: Socket; sendData: SendData } {
  return { socket, sendData: () => ({ sentBytes: 0, canSendMore: true }) };
}

describe("coalesceWrites", () => {
  it("sends a turn's first message at once in one syscall, the rest of the turn in one more, bytes in order", async () => {
    const [writer, reader] = await socketPair();
    const conn = tcpConnection(writer);
    expect(coalesceWrites(conn)).toBe(true);
    const seen = countFlushes(writer);
    // as Noise hands it over: a 2-byte length prefix, then the ciphertext — three times in one tick
    const r1 = conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 3), Uint8Array.of(1, 2, 3)));
    expect(seen.flushes).toEqual([2]); // the first message left at once, prefix and ciphertext in one writev
    const r2 = conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 2), Uint8Array.of(4, 5)));
    const r3 = conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 1), Uint8Array.of(6)));
    expect(r1).toEqual({ sentBytes: 5, canSendMore: true });
    expect(r2).toEqual({ sentBytes: 4, canSendMore: true });
    expect(r3).toEqual({ sentBytes: 3, canSendMore: true });
    expect(seen.flushes).toEqual([2]); // the others are corked until the tick ends
    const got = await readAll(reader, 12);
    expect([...got]).toEqual([0, 3, 1, 2, 3, 0, 2, 4, 5, 0, 1, 6]);
    expect(seen.flushes).toEqual([2, 4]); // then one writev of their four buffers
    // a later tick is a new turn: its first message leaves at once again
    conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 1), Uint8Array.of(9)));
    expect(seen.flushes).toEqual([2, 4, 2]);
    expect([...(await readAll(reader, 3))]).toEqual([0, 1, 9]);
    await sleep(1);
    expect(seen.flushes).toEqual([2, 4, 2]); // nothing was corked behind it, so the tick's end writes nothing
  });

  it("keeps every byte in order over many turns of mixed sizes", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 8 }), async (turns) => {
        const [writer, reader] = await socketPair();
        const conn = tcpConnection(writer);
        coalesceWrites(conn);
        const seen = countFlushes(writer);
        const expected: number[] = [];
        for (const turn of turns) {
          for (const msg of turn) {
            conn.sendData(new Uint8ArrayList(Uint8Array.of(0, msg.length), Uint8Array.from(msg)));
            expected.push(0, msg.length, ...msg);
          }
          await new Promise<void>((r) => process.nextTick(r));
        }
        expect([...(await readAll(reader, expected.length))]).toEqual(expected);
        // one syscall for each turn's first message, one more for the rest of a turn that had more
        expect(seen.flushes.length).toBe(turns.reduce((n, t) => n + (t.length > 1 ? 2 : 1), 0));
      }),
      { numRuns: 30 },
    );
  });

  it("reports backpressure as the socket does, and every byte still arrives", async () => {
    const [writer, reader] = await socketPair();
    const conn = tcpConnection(writer);
    coalesceWrites(conn);
    const big = new Uint8Array(writer.writableHighWaterMark + 1).fill(7);
    const r = conn.sendData(new Uint8ArrayList(Uint8Array.of(1), big));
    expect(r).toEqual({ sentBytes: big.length + 1, canSendMore: false });
    const drained = once(writer, "drain");
    const got = await readAll(reader, big.length + 1);
    await drained;
    expect(got[0]).toBe(1);
    expect(got.subarray(1).every((b) => b === 7)).toBe(true);
  });

  it("leaves anything without a Node socket alone, and patches once", () => {
    const sendData = () => ({ sentBytes: 0, canSendMore: true });
    const plain = { sendData };
    expect(coalesceWrites(plain)).toBe(false);
    expect(plain.sendData).toBe(sendData);
    expect(coalesceWrites(null)).toBe(false);
    expect(coalesceWrites({ socket: {}, sendData })).toBe(false);
  });

  it("a socket destroyed while corked neither throws nor writes what was held", async () => {
    const [writer] = await socketPair();
    const conn = tcpConnection(writer);
    coalesceWrites(conn);
    const seen = countFlushes(writer);
    writer.on("error", () => {});
    conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 1), Uint8Array.of(1))); // leaves at once
    conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 1), Uint8Array.of(2))); // corked behind it
    expect(writer.writableCorked).toBe(1);
    writer.destroy();
    await sleep(5);
    expect(writer.destroyed).toBe(true);
    expect(seen.flushes).toEqual([2]);
  });

  it("a write that throws leaves the socket uncorked, and the next message still arrives", async () => {
    const [writer, reader] = await socketPair();
    const conn = tcpConnection(writer) as unknown as { sendData: (data: unknown) => unknown };
    coalesceWrites(conn);
    // a chunk Node's socket refuses (not bytes) throws from `write` in the first-message path
    const bad = { byteLength: 1, *[Symbol.iterator]() { yield 42 as unknown as Uint8Array; } };
    expect(() => conn.sendData(bad)).toThrow();
    expect(writer.writableCorked).toBe(0);
    await new Promise<void>((r) => setImmediate(r)); // a new turn
    conn.sendData(new Uint8ArrayList(Uint8Array.of(0, 1), Uint8Array.of(8)));
    expect([...(await readAll(reader, 3))]).toEqual([0, 1, 8]);
    expect(writer.writableCorked).toBe(0);
  });
});

describe("quietLengthDecoder", () => {
  const uint16BE = Object.assign(
    (data: Uint8ArrayList) => {
      if (data.length < 2) throw new RangeError("Could not decode int16BE");
      return data.getUint16(0);
    },
    { bytes: 2 },
  );
  type LengthDecoder = typeof uint16BE;

  /**
   * The contract of `@libp2p/utils` 7's `LengthPrefixedDecoder.decode` as Noise 17 configures it
   * (`encodingLength: () => 2`): after each chunk, read lengths until the length decoder throws a `RangeError` or
   * the buffer holds less than prefix + body, taking out each complete message (empty ones are skipped).
   */
  const lpDecoder = (decoder: { lengthDecoder: LengthDecoder; encodingLength: (n: number) => number }) => {
    const buffer = new Uint8ArrayList();
    return (chunk: Uint8Array): Uint8Array[] => {
      buffer.append(chunk);
      const out: Uint8Array[] = [];
      for (;;) {
        let len: number;
        try {
          len = decoder.lengthDecoder(buffer);
        } catch (e) {
          if (e instanceof RangeError) break;
          throw e;
        }
        const total = decoder.encodingLength(len) + len;
        if (buffer.byteLength < total) break;
        const body = buffer.subarray(decoder.encodingLength(len), total);
        buffer.consume(total);
        if (body.byteLength > 0) out.push(body);
      }
      return out;
    };
  };

  it("waits for a prefix's second byte without throwing, and decodes the rest as before", () => {
    const conn = { decoder: { lengthDecoder: uint16BE as unknown, encodingLength: () => 2 } };
    expect(quietLengthDecoder(conn)).toBe(true);
    const decode = conn.decoder.lengthDecoder as LengthDecoder;
    expect(decode).not.toBe(uint16BE);
    expect(decode.bytes).toBe(2);
    // 0 bytes or 1: length 0, whose 2-byte prefix is more than the buffer holds — the decoder waits
    expect(decode(new Uint8ArrayList())).toBe(0);
    expect(decode(new Uint8ArrayList(Uint8Array.of(1)))).toBe(0);
    expect(decode(new Uint8ArrayList(Uint8Array.of(1), Uint8Array.of(2, 99)))).toBe(258);
  });

  it("keeps a decoder whose encodingLength would not wait on 0 on the prebuilt RangeError", () => {
    for (const decoder of [{ lengthDecoder: uint16BE as unknown }, { lengthDecoder: uint16BE as unknown, encodingLength: () => 0 }]) {
      expect(quietLengthDecoder({ decoder })).toBe(true);
      const decode = decoder.lengthDecoder as LengthDecoder;
      const caught = (data: Uint8ArrayList): unknown => {
        try {
          decode(data);
        } catch (e) {
          return e;
        }
        return null;
      };
      const first = caught(new Uint8ArrayList());
      expect(first).toBeInstanceOf(RangeError); // what LengthPrefixedDecoder waits for more bytes on
      expect(caught(new Uint8ArrayList(Uint8Array.of(1)))).toBe(first); // the same instance: no stack per throw
    }
  });

  it("gives the same messages as Noise's own decoder however the stream is cut, and never throws", () => {
    fc.assert(
      fc.property(
        fc.array(fc.uint8Array({ minLength: 0, maxLength: 40 }), { maxLength: 12 }),
        fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 30 }),
        (messages, cuts) => {
          const wire = new Uint8ArrayList();
          for (const m of messages) wire.append(Uint8Array.of(m.length >> 8, m.length & 0xff), m);
          const bytes = wire.subarray();
          const quiet = { lengthDecoder: uint16BE as unknown, encodingLength: () => 2 };
          expect(quietLengthDecoder({ decoder: quiet })).toBe(true);
          const patched = quiet.lengthDecoder as LengthDecoder;
          let throws = 0;
          const counting: LengthDecoder = Object.assign((d: Uint8ArrayList) => {
            try {
              return patched(d);
            } catch (e) {
              throws++;
              throw e;
            }
          }, { bytes: 2 });
          const ours = lpDecoder({ lengthDecoder: counting, encodingLength: () => 2 });
          const theirs = lpDecoder({ lengthDecoder: uint16BE, encodingLength: () => 2 });
          const got: Uint8Array[] = [];
          const want: Uint8Array[] = [];
          let at = 0;
          for (let i = 0; at < bytes.length; i++) {
            const chunk = bytes.subarray(at, at + cuts[i % cuts.length]!);
            at += chunk.length;
            got.push(...ours(chunk));
            want.push(...theirs(chunk));
          }
          expect(got.map((b) => [...b])).toEqual(want.map((b) => [...b]));
          expect(want.map((b) => [...b])).toEqual(messages.filter((m) => m.length > 0).map((m) => [...m]));
          expect(throws).toBe(0); // Noise's own throws once per chunk that ends on a message boundary
        },
      ),
    );
  });

  it("leaves anything without a length decoder alone", () => {
    expect(quietLengthDecoder({})).toBe(false);
    expect(quietLengthDecoder({ decoder: {} })).toBe(false);
    expect(quietLengthDecoder(null)).toBe(false);
  });
});

interface SentFrame {
  type: number;
  flag: number;
  length: number;
}

const quiet = Object.assign(() => {}, { error: () => {}, trace: () => {}, enabled: false }) as unknown as {
  newScope(): unknown;
};
(quiet as { newScope: () => unknown }).newScope = () => quiet;

function yamuxStream(state: StreamState): { stream: YamuxStream; sent: SentFrame[] } {
  const sent: SentFrame[] = [];
  const stream = new YamuxStream({
    id: "1",
    streamId: 1,
    state,
    direction: "inbound",
    log: quiet as never,
    getRTT: () => -1, // no window auto-tuning: the window stays WINDOW
    sendFrame: (header) => {
      sent.push({ type: header.type, flag: header.flag, length: header.length });
      return true;
    },
  });
  return { stream, sent };
}

function deliver(stream: YamuxStream, bytes: number): void {
  stream.handleData({
    header: { type: DATA, flag: 0, streamID: 1, length: bytes, version: 0 },
    data: new Uint8ArrayList(new Uint8Array(bytes)),
  });
}

const updates = (sent: SentFrame[]) => sent.filter((f) => f.type === WINDOW_UPDATE);

describe("halfWindowUpdates", () => {
  it("returns the window once half is used, not after every frame", () => {
    const eager = yamuxStream(StreamState.Established);
    const lazy = yamuxStream(StreamState.Established);
    expect(halfWindowUpdates(lazy.stream)).toBe(true);
    for (let i = 0; i < 128; i++) {
      deliver(eager.stream, 1024);
      deliver(lazy.stream, 1024);
    }
    expect(updates(eager.sent)).toHaveLength(128); // yamux's own rule: one per data frame
    expect(updates(lazy.sent)).toHaveLength(0); // exactly half used: nothing owed yet
    deliver(lazy.stream, 1);
    expect(updates(lazy.sent)).toEqual([{ type: WINDOW_UPDATE, flag: 0, length: 128 * 1024 + 1 }]);
    deliver(lazy.stream, 1024);
    expect(updates(lazy.sent)).toHaveLength(1);
  });

  it("still sends the ACK a new inbound stream owes with its first update", () => {
    const { stream, sent } = yamuxStream(StreamState.SYNReceived);
    halfWindowUpdates(stream);
    deliver(stream, 10);
    expect(updates(sent)).toEqual([{ type: WINDOW_UPDATE, flag: ACK, length: 10 }]);
    deliver(stream, 10);
    expect(updates(sent)).toHaveLength(1);
  });

  it("sends nothing while paused, and what is owed on resume", () => {
    const { stream, sent } = yamuxStream(StreamState.Established);
    halfWindowUpdates(stream);
    stream.sendPause();
    for (let i = 0; i < 3; i++) deliver(stream, 64 * 1024);
    expect(updates(sent)).toHaveLength(0);
    stream.sendResume();
    expect(updates(sent)).toEqual([{ type: WINDOW_UPDATE, flag: 0, length: 3 * 64 * 1024 }]);
  });

  it("leaves anything that is not a yamux stream alone", () => {
    expect(halfWindowUpdates({ sendWindowUpdate() {} })).toBe(false);
    expect(halfWindowUpdates(null)).toBe(false);
  });

  it("a writer that sends whenever its window allows is never refused and never stalls", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 3 * WINDOW }), { minLength: 1, maxLength: 60 }), (writes) => {
        const { stream, sent } = yamuxStream(StreamState.Established);
        halfWindowUpdates(stream);
        let credit = WINDOW; // the writer's view of the window
        let seen = 0;
        for (const want of writes) {
          let left = want;
          while (left > 0) {
            // a stall: the writer has bytes and no credit, and no update is coming
            expect(credit).toBeGreaterThan(0);
            const n = Math.min(left, credit, 64 * 1024 - HEADER);
            credit -= n;
            left -= n;
            const before = sent.length;
            deliver(stream, n); // throws if the receive window is exceeded
            for (const f of sent.slice(before)) if (f.type === WINDOW_UPDATE) credit += f.length;
            seen += n;
            expect(credit).toBeLessThanOrEqual(WINDOW);
            expect(credit).toBeGreaterThanOrEqual(WINDOW / 2);
          }
        }
        expect(seen).toBe(writes.reduce((a, b) => a + b, 0));
      }),
      { numRuns: 200 },
    );
  });
});

describe("the libp2p seam with both", () => {
  it("carries frames larger than the yamux window, in order, many times over", async () => {
    const { seams } = await startLibp2pSeams(2);
    const [a, b] = seams as [(typeof seams)[0], (typeof seams)[0]];
    const got: number[] = [];
    b.onFrame((_from, frame) => got.push(frame[0]! + frame.length));
    const sizes = [1, 300_000, 17, 1 << 20, 70_000, 1 << 20, 5, 1 << 20, 1 << 20, 2];
    const want = sizes.map((n, i) => i + n);
    const deadline = Date.now() + 20_000;
    let sent = 0;
    while (got.length < sizes.length && Date.now() < deadline) {
      while (sent < sizes.length && b.peers.get().has(a.self) && a.peers.get().has(b.self)) {
        const n = sizes[sent]!;
        if (a.send(b.self, new Uint8Array(n).fill(sent)) !== "queued") break;
        sent++;
      }
      await sleep(20);
    }
    expect(got).toEqual(want);
    for (const s of seams) await s.close();
  });
});
