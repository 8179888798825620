/**
 * The leader's side of InstallSnapshot against a faulty (or buggy) follower's answers (governed.md R-S2, R-X5), on
 * hand-driven cores: voters `a`, `b` and `late`; `a` leads (elected via `b`), has compacted through 2 while `late`
 * heard nothing, and sends `late` its 400-byte snapshot in chunks of 177 bytes (maxMessageBytes 256).
 *
 * An answer "not done, next offset ≥ total" is one no correct follower sends: it installs the snapshot once it
 * holds `total` bytes and answers done. Found in review: the leader took that offset as given and sent the chunk
 * `[total, total)` — empty, which followers refuse since empty chunks are refused — then sent it again at every
 * heartbeat, for good. Now the leader counts the answer (`snapshot-reply-invalid`), goes back to offset 0 (the one
 * offset every follower takes, whatever it holds: it starts a new reassembly or answers with what it really has),
 * and waits for the next heartbeat resend instead of answering at once, so a follower that keeps answering so gets
 * at most one chunk per heartbeat period. An answer that asks for the offset the leader just sent (the chunk did not
 * take: a follower whose `snapshotMaxBytes` is below the snapshot, or a duplicated answer) is not progress either:
 * the heartbeat resends it, not the answer. Whatever a follower answers, the leader never sends an empty chunk of a
 * non-empty snapshot and never throws.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import type { ClusterConfig, Envelope, Message, RaftCore, StoredSnapshot } from "../src/index.ts";
import { cycle, electVia, hand, handCore, sent } from "./support/hand-driven.ts";

const V: ClusterConfig = { voters: ["a", "b", "late"], learners: [] };
const enc = new TextEncoder();
const TOTAL = 400;
const STATE = Uint8Array.from({ length: TOTAL }, (_, i) => i % 251);
const CHUNK = 177;
type SnapshotMessage = Extract<Message, { type: "snapshot" }>;

/** `a` leads at term 1 with commit 3 (on `b`), has compacted through 2 with `state`, and has started `late`'s snapshot. */
function setup(state: Uint8Array = STATE): { a: RaftCore; late: RaftCore; first: SnapshotMessage[] } {
  const cfg = { maxMessageBytes: 256 };
  const a = handCore("a", { bootstrap: V, cfg });
  const b = handCore("b", { bootstrap: V, cfg });
  const late = handCore("late", { bootstrap: V, cfg });
  hand(b, sent(hand(a, sent(electVia(a, b)), b)), a);
  a.propose(1, enc.encode("x"), null);
  hand(b, sent(hand(a, sent(cycle(a)), b)), a);
  expect(a.compact(2, state)).toBe(true);
  cycle(a);
  a.propose(2, enc.encode("y"), null);
  const start = sent(cycle(a));
  hand(b, sent(hand(a, start, b)), a);
  expect(a.progress.get("late")?.state).toBe("snapshot");
  return { a, late, first: chunksTo(start) };
}

function chunksTo(msgs: readonly Envelope[]): SnapshotMessage[] {
  return msgs.flatMap((m) => (m.to === "late" && m.message.type === "snapshot" ? [m.message] : []));
}

/** A follower that answers every chunk "not done, next offset = total" — the answer that made the leader loop. */
const faulty = (a: RaftCore, c: SnapshotMessage): Message => ({ type: "snapshotReply", term: a.term, lastIndex: c.lastIndex, nextOffset: c.total, done: false });

/**
 * Runs `periods` heartbeat periods of `a` in 10 ms ticks; `late` is played by `answer`, which sees every chunk as
 * soon as it is sent and may answer it at once. Returns every chunk sent, with the time it went out.
 */
function run(a: RaftCore, first: readonly SnapshotMessage[], periods: number, answer: (c: SnapshotMessage) => Message | null): { t: number; c: SnapshotMessage }[] {
  const log: { t: number; c: SnapshotMessage }[] = first.map((c) => ({ t: a.now, c }));
  let pending = [...first];
  let now = a.now;
  const answerAll = (): void => {
    for (let guard = 0; pending.length > 0; guard++) {
      expect(guard, "the leader and the follower answer each other without end").toBeLessThan(100);
      const replies = pending.map(answer).filter((m): m is Message => m !== null);
      for (const m of replies) a.step("late", m);
      pending = chunksTo(sent(cycle(a)));
      for (const c of pending) log.push({ t: now, c });
    }
  };
  for (let k = 0; k < periods * 5; k++) {
    answerAll();
    now += 10;
    a.tick(now);
    pending = chunksTo(sent(cycle(a)));
    for (const c of pending) log.push({ t: now, c });
  }
  answerAll();
  return log;
}

describe("an InstallSnapshot answer 'not done, next offset = total'", () => {
  it("is counted, sends no empty chunk, and restarts the transfer from offset 0 at the next heartbeat, once per period", () => {
    const { a, first } = setup();
    expect(first.map((c) => [c.offset, c.data.length])).toEqual([[0, CHUNK]]);
    const log = run(a, first, 20, (c) => faulty(a, c));
    expect(log.filter(({ c }) => c.data.length === 0)).toEqual([]);
    // every chunk starts the transfer again: the answer told the leader nothing it can trust
    expect(log.map(({ c }) => c.offset)).toEqual(log.map(() => 0));
    // one chunk per heartbeat period (50 ms), never one straight back in answer to the faulty reply
    for (let i = 1; i < log.length; i++) expect(log[i]!.t - log[i - 1]!.t).toBeGreaterThanOrEqual(50);
    expect(log.length).toBeGreaterThan(10);
    expect(a.refusedFrames.get("snapshot-reply-invalid")).toBe(log.length);
    expect(a.state).toBe("leader");
    expect(a.progress.get("late")?.state).toBe("snapshot");
  });

  it("an answer past total is refused the same way; once the follower answers correctly the transfer completes", () => {
    const { a, late, first } = setup();
    const bad = run(a, first, 3, (c) => ({ type: "snapshotReply", term: a.term, lastIndex: c.lastIndex, nextOffset: c.total + 1 + c.offset, done: false }));
    expect(bad.every(({ c }) => c.offset === 0 && c.data.length === CHUNK)).toBe(true);
    expect(a.refusedFrames.get("snapshot-reply-invalid")).toBe(bad.length);
    // the follower is honest from now on: the next heartbeat's chunk 0 starts a transfer that completes
    let installed: StoredSnapshot | null = null;
    run(a, [], 3, (c) => {
      late.step("a", c);
      const rd = cycle(late);
      installed = late.snapshot;
      return rd.messages.concat(rd.earlyMessages).find((m) => m.to === "a")?.message ?? null;
    });
    expect(installed).not.toBeNull();
    expect(late.snapshot?.state).toEqual(STATE);
    expect(a.progress.get("late")?.match).toBeGreaterThanOrEqual(2);
  });

  it("an empty snapshot answered 'not done, next offset 0' gets one (empty) chunk per heartbeat period, not one per answer", () => {
    const { a, first } = setup(new Uint8Array(0));
    expect(first.map((c) => [c.total, c.data.length])).toEqual([[0, 0]]);
    const log = run(a, first, 10, (c) => faulty(a, c));
    for (let i = 1; i < log.length; i++) expect(log[i]!.t - log[i - 1]!.t).toBeGreaterThanOrEqual(50);
    expect(a.refusedFrames.get("snapshot-reply-invalid")).toBe(log.length);
  });

  it("an answer asking again for the chunk just sent (a follower that cannot take it) waits for the heartbeat", () => {
    const { a, first } = setup();
    // a follower whose snapshotMaxBytes is below 400 answers every chunk "next offset 0": chunk 0 did not take
    const log = run(a, first, 10, (c) => ({ type: "snapshotReply", term: a.term, lastIndex: c.lastIndex, nextOffset: 0, done: false }));
    for (let i = 1; i < log.length; i++) expect(log[i]!.t - log[i - 1]!.t).toBeGreaterThanOrEqual(50);
    expect(log.every(({ c }) => c.offset === 0 && c.data.length === CHUNK)).toBe(true);
  });
});

describe("whatever a follower answers (property)", () => {
  type Action =
    | { kind: "answer"; lastIndex: number; nextOffset: number; done: boolean; termDelta: number }
    | { kind: "tick"; ms: number };
  const action: fc.Arbitrary<Action> = fc.oneof(
    {
      weight: 5,
      arbitrary: fc.record({
        kind: fc.constant("answer" as const),
        lastIndex: fc.oneof(fc.constant(2), fc.constant(2), fc.integer({ min: 0, max: 6 })),
        nextOffset: fc.oneof(fc.constantFrom(0, 1, CHUNK - 1, CHUNK, 2 * CHUNK, TOTAL - 1, TOTAL, TOTAL + 1), fc.integer({ min: 0, max: 2 ** 40 })),
        done: fc.boolean(),
        termDelta: fc.constantFrom(0, 0, 0, -1),
      }),
    },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant("tick" as const), ms: fc.integer({ min: 1, max: 120 }) }) },
  );

  it("the leader never sends an empty chunk of a non-empty snapshot, nor one past its end, and never throws", () => {
    fc.assert(
      fc.property(fc.array(action, { maxLength: 60 }), (actions) => {
        const { a, first } = setup();
        const check = (cs: readonly SnapshotMessage[]): void => {
          for (const c of cs) {
            expect(c.total).toBe(TOTAL);
            expect(c.data.length).toBeGreaterThan(0);
            expect(c.offset + c.data.length).toBeLessThanOrEqual(c.total);
          }
        };
        check(first);
        let now = a.now;
        for (const act of actions) {
          if (act.kind === "tick") {
            now += act.ms;
            a.tick(now);
          } else {
            a.step("late", { type: "snapshotReply", term: Math.max(0, a.term + act.termDelta), lastIndex: act.lastIndex, nextOffset: act.nextOffset, done: act.done });
          }
          check(chunksTo(sent(cycle(a))));
        }
      }),
      { numRuns: 300 },
    );
  });
});
