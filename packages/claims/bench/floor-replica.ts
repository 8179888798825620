/**
 * One process of `commit-floor.ts`'s minimal replicated log: no Raft, no checksums, no JSON — only what any 3-voter,
 * fsync-on service written in Node must do per commit. Started by the bench, never by hand:
 *
 *   node floor-replica.ts follower <sync> <log file>
 *   node floor-replica.ts leader <sync> <log file> <needed acks> [<follower port>,…]
 *
 * `<sync>` is `dsync` (the log file opened with O_DSYNC: every write durable before it completes) or `nosync` (a plain
 * write into the page cache). Both roles preallocate their log file (zeros, written and fsync'd once) so a write
 * changes no file size or extent, and then write each entry at the next offset with `fs.write` (libuv's thread pool),
 * wrapping at the end of the file.
 *
 * Wire format, every frame on every socket: a 4-byte big-endian length, then that many bytes. A request (client →
 * leader, leader → follower) is a 4-byte id and the entry; an answer (follower → leader, leader → client) is the 4-byte
 * id alone. The leader hands a request's entry to its own write and sends the same frame to every follower in the same
 * turn of its event loop, and answers once its own write is done and `<needed acks>` followers have acked it.
 *
 * Each process listens on a free loopback port, prints `port <n>` on stdout when ready, and exits when its stdin
 * closes (the bench is gone, however it went).
 */
import { closeSync, constants, fsyncSync, openSync, write, writeSync } from "node:fs";
import { createServer, connect, type Socket } from "node:net";

/** The log file's preallocated size; entries wrap around at its end. */
const LOG_BYTES = 32 * 1024 * 1024;
/** The largest frame either role accepts: a bench request is ~300 bytes. */
const MAX_FRAME = 64 * 1024;

const fail = (why: string): never => {
  process.stderr.write(`floor-replica: ${why}\n`);
  process.exit(2);
};

const [role, sync, file, neededArg, followerArg] = process.argv.slice(2);
if (role !== "leader" && role !== "follower") fail(`role ${role} is neither leader nor follower`);
if (sync !== "dsync" && sync !== "nosync") fail(`sync ${sync} is neither dsync nor nosync`);
if (file === undefined) fail("no log file given");

/** Writes zeros over the whole file and fsyncs it once, then opens it for the entries. */
function openLog(path: string): number {
  const pre = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC, 0o600);
  const zeros = Buffer.alloc(1024 * 1024);
  for (let off = 0; off < LOG_BYTES; off += zeros.length) writeSync(pre, zeros, 0, zeros.length, off);
  fsyncSync(pre);
  closeSync(pre);
  return openSync(path, constants.O_WRONLY | (sync === "dsync" ? constants.O_DSYNC : 0));
}

const fd = openLog(file!);
let position = 0;
/** Writes `entry` at the log's next offset; `done` runs when the write (durable, under dsync) has completed. */
function append(entry: Buffer, done: () => void): void {
  if (position + entry.length > LOG_BYTES) position = 0;
  const at = position;
  position += entry.length;
  write(fd, entry, 0, entry.length, at, (err) => {
    if (err !== null) fail(`write at ${at}: ${err.message}`);
    done();
  });
}

/** Calls `onFrame(frame, body)` for each whole frame that arrives on `sock` (`frame` includes its length prefix). */
function frames(sock: Socket, onFrame: (frame: Buffer, body: Buffer) => void): void {
  let pending: Buffer = Buffer.alloc(0);
  sock.on("data", (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const len = pending.readUInt32BE(0);
      if (len < 4 || len > MAX_FRAME) fail(`a frame of ${len} bytes (4…${MAX_FRAME} expected)`);
      if (pending.length < 4 + len) break;
      const frame = pending.subarray(0, 4 + len);
      pending = pending.subarray(4 + len);
      onFrame(frame, frame.subarray(4));
    }
  });
  sock.on("error", (e) => fail(`socket: ${e.message}`));
}

const answer = (id: number): Buffer => {
  const b = Buffer.allocUnsafe(8);
  b.writeUInt32BE(4, 0);
  b.writeUInt32BE(id, 4);
  return b;
};

const followers: Socket[] = [];
let needed = 0;
if (role === "leader") {
  needed = Number(neededArg);
  const ports = (followerArg ?? "").split(",").filter((p) => p !== "").map(Number);
  if (!Number.isInteger(needed) || needed < 0 || needed > ports.length) fail(`needed acks ${neededArg} is not a whole number in 0…${ports.length}`);
  for (const port of ports) {
    const s = connect(port, "127.0.0.1");
    s.setNoDelay(true);
    await new Promise<void>((resolve) => s.once("connect", resolve));
    followers.push(s);
  }
}

/** Leader: requests not yet answered — has its own write completed, how many followers have acked, whom to answer. */
const inFlight = new Map<number, { written: boolean; acks: number; client: Socket }>();
const settle = (id: number): void => {
  const r = inFlight.get(id);
  if (r === undefined || !r.written || r.acks < needed) return;
  inFlight.delete(id);
  r.client.write(answer(id));
};
for (const f of followers) {
  frames(f, (_frame, body) => {
    const id = body.readUInt32BE(0);
    const r = inFlight.get(id);
    if (r === undefined) return; // answered already on the other follower's ack
    r.acks++;
    settle(id);
  });
}

const server = createServer((sock) => {
  sock.setNoDelay(true);
  frames(sock, (frame, body) => {
    const id = body.readUInt32BE(0);
    const entry = body.subarray(4);
    if (role === "follower") {
      append(entry, () => sock.write(answer(id)));
      return;
    }
    inFlight.set(id, { written: false, acks: 0, client: sock });
    append(entry, () => {
      const r = inFlight.get(id);
      if (r === undefined) return;
      r.written = true;
      settle(id);
    });
    for (const f of followers) f.write(frame);
  });
});
server.listen(0, "127.0.0.1", () => {
  const addr = server.address();
  if (addr === null || typeof addr === "string") fail("no port to listen on");
  else process.stdout.write(`port ${addr.port}\n`);
});
process.stdin.resume();
process.stdin.on("close", () => process.exit(0));
process.stdin.on("end", () => process.exit(0));
