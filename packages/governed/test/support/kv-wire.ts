/**
 * A small request/response protocol over TCP for putting keys into a Raft member's key-value machine — the
 * client path of the benchmark (issue 15) until the daemon's HTTP API exists. Requests are pipelined on one
 * connection (like a gRPC channel) and answered by id, in any order.
 *
 *   request   u32 frameBytes | u32 id | u8 op (1 = put) | u16 keyBytes | key (UTF-8) | value
 *   response  u32 frameBytes | u32 id | u8 status (0 = ok, 1 = failed) | f64 index | error text (UTF-8)
 *
 * `frameBytes` counts what follows it. Frames above `KV_MAX_FRAME_BYTES` close the connection.
 */
import { connect, createServer } from "node:net";
import type { Server, Socket } from "node:net";

/** Largest frame either side accepts. */
export const KV_MAX_FRAME_BYTES = 1 << 20;
const OP_PUT = 1;
const enc = new TextEncoder();
const dec = new TextDecoder();

/** The client side as the benchmark sees it: one `put` per write, resolved once the write is applied. */
export interface KvClient {
  put(key: string, value: Uint8Array): Promise<void>;
  close(): Promise<void>;
}

/** Splits a byte stream into `u32 length`-prefixed frames; `onFrame` gets each frame's bytes after the length. */
function frames(sock: Socket, onFrame: (f: Buffer) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  sock.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    let at = 0;
    while (pending.length - at >= 4) {
      const n = pending.readUInt32LE(at);
      if (n > KV_MAX_FRAME_BYTES) {
        sock.destroy();
        return;
      }
      if (pending.length - at - 4 < n) break;
      onFrame(pending.subarray(at + 4, at + 4 + n));
      at += 4 + n;
    }
    pending = at === pending.length ? Buffer.alloc(0) : pending.subarray(at);
  });
}

/** Serves the protocol on 127.0.0.1 (an ephemeral port); `put` resolves with the applied index or rejects. */
export async function serveKv(put: (key: string, value: Uint8Array) => Promise<number>): Promise<{ port: number; server: Server }> {
  const server = createServer((sock) => {
    sock.setNoDelay(true);
    frames(sock, (f) => {
      const id = f.readUInt32LE(0);
      const reply = (ok: boolean, index: number, error = ""): void => {
        const e = enc.encode(error);
        const out = Buffer.alloc(4 + 4 + 1 + 8 + e.length);
        out.writeUInt32LE(out.length - 4, 0);
        out.writeUInt32LE(id, 4);
        out[8] = ok ? 0 : 1;
        out.writeDoubleLE(index, 9);
        out.set(e, 17);
        if (!sock.destroyed) sock.write(out);
      };
      if (f.length < 7 || f[4] !== OP_PUT) return reply(false, 0, "unknown operation");
      const keyBytes = f.readUInt16LE(5);
      if (7 + keyBytes > f.length) return reply(false, 0, "key runs past the frame");
      const key = dec.decode(f.subarray(7, 7 + keyBytes));
      put(key, Uint8Array.prototype.slice.call(f, 7 + keyBytes)).then(
        (index) => reply(true, index),
        (e: Error) => reply(false, 0, e.name),
      );
    });
    sock.on("error", () => sock.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  if (a === null || typeof a === "string") throw new Error("kv server has no port");
  return { port: a.port, server };
}

/** Connects to a `serveKv` server. */
export async function kvTcpClient(port: number, host = "127.0.0.1"): Promise<KvClient> {
  const sock = connect({ port, host, noDelay: true });
  await new Promise<void>((resolve, reject) => {
    sock.once("connect", resolve);
    sock.once("error", reject);
  });
  let next = 1;
  const waiting = new Map<number, { resolve(): void; reject(e: Error): void }>();
  const failAll = (e: Error): void => {
    for (const w of waiting.values()) w.reject(e);
    waiting.clear();
  };
  sock.on("error", (e) => failAll(e));
  sock.on("close", () => failAll(new Error("kv connection closed")));
  frames(sock, (f) => {
    const w = waiting.get(f.readUInt32LE(0));
    if (w === undefined) return;
    waiting.delete(f.readUInt32LE(0));
    if (f[4] === 0) w.resolve();
    else w.reject(new Error(`put failed: ${dec.decode(f.subarray(13))}`));
  });
  return {
    put(key, value) {
      const k = enc.encode(key);
      const id = next++ >>> 0;
      const out = Buffer.alloc(4 + 4 + 1 + 2 + k.length + value.length);
      out.writeUInt32LE(out.length - 4, 0);
      out.writeUInt32LE(id, 4);
      out[8] = OP_PUT;
      out.writeUInt16LE(k.length, 9);
      out.set(k, 11);
      out.set(value, 11 + k.length);
      return new Promise<void>((resolve, reject) => {
        waiting.set(id, { resolve, reject });
        sock.write(out);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        sock.end(() => resolve());
        sock.destroy();
        resolve();
      }),
  };
}
