/**
 * The byte cap on one etcd append transaction (`EtcdBatchLimit`, used by `etcd-log.ts`), as a model-based property
 * test: random runs of "etcd refused a batch of b bytes" and "etcd wrote a batch" against the rules it promises.
 * Found in review: the cap only halved on a too-large refusal and never grew back, so one burst against a lower
 * `--max-request-bytes` kept every later transaction small for the life of the process.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { EtcdBatchLimit } from "../src/etcd/etcd-batch-limit.ts";
import { ETCD_BATCH_BYTES, ETCD_BATCH_GROW_AFTER, ETCD_BATCH_REFUSAL_MEMORY } from "../src/index.ts";

const MAX = 1024 * 1024;

describe("EtcdBatchLimit", () => {
  it("halves to the refused batch, grows back after successes without reaching a refused size, and recovers to max once the refusal is forgotten", () => {
    type Step = { kind: "refused"; bytes: number } | { kind: "written"; times: number };
    const step: fc.Arbitrary<Step> = fc.oneof(
      { weight: 1, arbitrary: fc.record({ kind: fc.constant("refused" as const), bytes: fc.integer({ min: 0, max: MAX }) }) },
      { weight: 4, arbitrary: fc.record({ kind: fc.constant("written" as const), times: fc.integer({ min: 1, max: 3 * ETCD_BATCH_GROW_AFTER }) }) },
    );
    fc.assert(
      fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
        const l = new EtcdBatchLimit(MAX);
        // the model: the smallest refused size still remembered, and successes since the last refusal
        let refused: number | null = null;
        let since = 0;
        for (const s of steps) {
          const before = l.bytes;
          if (s.kind === "refused") {
            // the log only sends batches within the cap (a lone larger entry is never split, so never reported)
            const b = Math.min(s.bytes, before);
            l.onRefused(b);
            refused = refused === null ? b : Math.min(refused, b);
            since = 0;
            expect(l.bytes).toBe(Math.max(1, Math.floor(b / 2)));
          } else {
            for (let i = 0; i < s.times; i++) {
              const was = l.bytes;
              l.onWritten();
              if (refused !== null && ++since >= ETCD_BATCH_REFUSAL_MEMORY) refused = null;
              // gradual: never more than doubling per success, never shrinking on one
              expect(l.bytes).toBeGreaterThanOrEqual(was);
              expect(l.bytes).toBeLessThanOrEqual(Math.max(was, was * 2));
            }
          }
          expect(l.refused).toBe(refused);
          expect(l.bytes).toBeGreaterThanOrEqual(1);
          expect(l.bytes).toBeLessThanOrEqual(MAX);
          // never again a size etcd refused, while that refusal is remembered
          if (refused !== null && refused > 1) expect(l.bytes).toBeLessThan(refused);
        }
        // it recovers: enough successes bring it back to the maximum
        for (let i = 0; i < ETCD_BATCH_REFUSAL_MEMORY + 40 * ETCD_BATCH_GROW_AFTER; i++) l.onWritten();
        expect(l.bytes).toBe(MAX);
        expect(l.refused).toBeNull();
      }),
      { numRuns: 300 },
    );
  });

  it("after a split it grows back towards the refused size within a few dozen appends, not never", () => {
    const l = new EtcdBatchLimit(ETCD_BATCH_BYTES);
    l.onRefused(160 * 1024);
    expect(l.bytes).toBe(80 * 1024);
    const seen: number[] = [];
    for (let i = 0; i < 3 * ETCD_BATCH_GROW_AFTER; i++) {
      l.onWritten();
      seen.push(l.bytes);
    }
    // halfway towards the refused 160 KiB at each growth step: 120, 140, 150 KiB
    expect([...new Set(seen)]).toEqual([80, 120, 140, 150].map((k) => k * 1024));
  });

  it("refuses a maximum that is not a positive integer", () => {
    expect(() => new EtcdBatchLimit(0)).toThrow(RangeError);
    expect(() => new EtcdBatchLimit(1.5)).toThrow(RangeError);
  });
});
