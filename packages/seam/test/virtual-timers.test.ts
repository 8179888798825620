import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { VirtualTimers } from "../src/testing.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 500);

/** Timers are set and cleared in batches, so that cancelled entries often pass the compaction threshold (64, and half the heap). */
type Op = { kind: "set"; ms: number[] } | { kind: "clear"; picks: number[] } | { kind: "advance"; ms: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant("set" as const), ms: fc.array(fc.integer({ min: 0, max: 50 }), { minLength: 1, maxLength: 40 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("clear" as const), picks: fc.array(fc.nat(), { minLength: 1, maxLength: 60 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 0, max: 30 }) }) },
);

describe("VirtualTimers", () => {
  it("runs exactly the callbacks not cancelled, in (due, creation) order, at their due time — however many are cancelled (heap compaction)", () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
        const t = new VirtualTimers();
        const ran: { id: number; at: number }[] = [];
        const handles: unknown[] = [];
        // Reference model: every timer with its due time, creation id and fate.
        const model: { id: number; due: number; cancelled: boolean; ran: boolean }[] = [];
        const expected: { id: number; at: number }[] = [];
        let now = 0;
        for (const o of ops) {
          if (o.kind === "set") {
            for (const ms of o.ms) {
              const id = model.length;
              model.push({ id, due: now + ms, cancelled: false, ran: false });
              handles.push(t.set(() => ran.push({ id, at: t.now() }), ms));
            }
          } else if (o.kind === "clear") {
            if (model.length === 0) continue;
            for (const pick of o.picks) {
              const k = pick % model.length;
              t.clear(handles[k]);
              if (!model[k]!.ran) model[k]!.cancelled = true;
            }
          } else {
            const target = now + o.ms;
            const due = model.filter((m) => !m.cancelled && !m.ran && m.due <= target).sort((a, b) => a.due - b.due || a.id - b.id);
            for (const m of due) {
              m.ran = true;
              expected.push({ id: m.id, at: m.due });
            }
            t.advanceBy(o.ms);
            now = target;
          }
          expect(t.pending()).toBe(model.filter((m) => !m.cancelled && !m.ran).length);
        }
        expect(ran).toEqual(expected);
      }),
      { numRuns: RUNS },
    );
  });

  it("cancelling most of 10,000 timers keeps the survivors' order", () => {
    const t = new VirtualTimers();
    const ran: number[] = [];
    const hs = Array.from({ length: 10_000 }, (_, i) => t.set(() => ran.push(i), 10_000 - i));
    for (let i = 0; i < 10_000; i++) if (i % 7 !== 0) t.clear(hs[i]);
    expect(t.pending()).toBe(Math.ceil(10_000 / 7));
    t.advanceBy(10_000);
    const survivors = Array.from({ length: 10_000 }, (_, i) => i).filter((i) => i % 7 === 0);
    expect(ran).toEqual(survivors.reverse());
  });
});
