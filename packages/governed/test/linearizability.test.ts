/** The linearizability checker against known-good and known-bad histories, and a property against brute force. */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { checkLinearizable, kvModel } from "../src/index.ts";
import type { KvInput, Operation } from "../src/index.ts";

type Op = Operation<KvInput, string>;
const put = (client: number, key: string, value: string, call: number, ret: number): Op => ({ client, input: { op: "put", key, value }, output: "ok", call, ret });
const app = (client: number, key: string, value: string, call: number, ret: number): Op => ({ client, input: { op: "append", key, value }, output: "ok", call, ret });
/** A write whose outcome stayed unknown (the call timed out): no output, never returned. */
const lost = (client: number, key: string, value: string, call: number): Op => ({ client, input: { op: "append", key, value }, output: undefined, call, ret: Infinity });
const get = (client: number, key: string, output: string | undefined, call: number, ret: number): Op => ({ client, input: { op: "get", key }, output, call, ret });

describe("linearizability checker (Porcupine-style)", () => {
  it("accepts sequential and legally concurrent histories", () => {
    expect(checkLinearizable(kvModel, [put(0, "x", "1", 0, 1), get(1, "x", "1", 2, 3)]).ok).toBe(true);
    // a read overlapping a write may see either value
    expect(checkLinearizable(kvModel, [put(0, "x", "1", 0, 10), get(1, "x", "", 1, 2), get(2, "x", "1", 3, 4)]).ok).toBe(true);
    // concurrent appends in either order, a later read fixes the order
    expect(checkLinearizable(kvModel, [app(0, "x", "a", 0, 5), app(1, "x", "b", 0, 5), get(2, "x", "ba", 6, 7)]).ok).toBe(true);
    // an unknown-outcome write may or may not have happened
    expect(checkLinearizable(kvModel, [lost(0, "x", "a", 0), get(1, "x", "", 1, 2), get(1, "x", "a", 3, 4)]).ok).toBe(true);
    expect(checkLinearizable(kvModel, [lost(0, "x", "a", 0), get(1, "x", "", 1, 2)]).ok).toBe(true);
  });

  it("rejects a stale read after a completed write", () => {
    const r = checkLinearizable(kvModel, [put(0, "x", "1", 0, 1), get(1, "x", "", 2, 3)]);
    expect(r).toEqual({ ok: false, reason: "not-linearizable", partition: 0 });
  });

  it("rejects a read of a value never written", () => {
    expect(checkLinearizable(kvModel, [put(0, "x", "1", 0, 1), get(1, "x", "2", 2, 3)]).ok).toBe(false);
  });

  it("rejects a duplicated append (an effect applied twice)", () => {
    expect(checkLinearizable(kvModel, [app(0, "x", "a", 0, 1), get(1, "x", "aa", 2, 3)]).ok).toBe(false);
  });

  it("rejects reads that go back in time (new value, then old value, sequentially)", () => {
    const h = [put(0, "x", "1", 0, 1), put(0, "x", "2", 2, 20), get(1, "x", "2", 3, 4), get(2, "x", "1", 5, 6)];
    expect(checkLinearizable(kvModel, h).ok).toBe(false);
  });

  it("rejects an order that contradicts real time between two keys' independent histories only in the bad key", () => {
    const h = [put(0, "y", "1", 0, 1), get(1, "y", "1", 2, 3), app(0, "x", "a", 0, 1), app(0, "x", "b", 2, 3), get(1, "x", "ba", 4, 5)];
    const r = checkLinearizable(kvModel, h);
    expect(r).toEqual({ ok: false, reason: "not-linearizable", partition: 0 }); // x sorts before y
  });

  it("stays fast with many unobserved timed-out writes, and still catches an observed one applied twice", () => {
    const h: Op[] = [];
    for (let i = 0; i < 40; i++) h.push(lost(i, "x", `[u${i}]`, i * 10)); // timed out, never seen
    for (let i = 0; i < 40; i++) h.push(app(100 + i, "x", `[k${i}]`, i * 10, i * 10 + 5));
    h.push(get(999, "x", Array.from({ length: 40 }, (_, i) => `[k${i}]`).join(""), 1000, 1001));
    const t0 = performance.now();
    expect(checkLinearizable(kvModel, h, 200_000).ok).toBe(true);
    expect(performance.now() - t0).toBeLessThan(5_000);
    // an unknown write that a read did observe is kept, and observing it twice is impossible
    const dup = [lost(0, "y", "[a]", 0), get(1, "y", "[a][a]", 5, 6)];
    expect(checkLinearizable(kvModel, dup).ok).toBe(false);
    const once = [lost(0, "y", "[a]", 0), get(1, "y", "[a]", 5, 6)];
    expect(checkLinearizable(kvModel, once).ok).toBe(true);
  });

  it("agrees with a brute-force search over all orders on small random histories", () => {
    const arbOp = fc.record({
      kind: fc.constantFrom("append", "get"),
      value: fc.constantFrom("a", "b", "c"),
      out: fc.constantFrom("", "a", "b", "ab", "ba", "c", "ca"),
      call: fc.integer({ min: 0, max: 8 }),
      len: fc.integer({ min: 0, max: 6 }),
    });
    fc.assert(
      fc.property(fc.array(arbOp, { minLength: 1, maxLength: 5 }), (raw) => {
        const ops: Op[] = raw.map((r, i) =>
          r.kind === "append"
            ? r.len === 6
              ? lost(i, "k", `${r.value}`, r.call) // outcome unknown
              : app(i, "k", `${r.value}`, r.call, r.call + r.len)
            : get(i, "k", r.out, r.call, r.call + r.len),
        );
        expect(checkLinearizable(kvModel, ops).ok).toBe(bruteForce(ops));
      }),
      { numRuns: 500 },
    );
  });
});

/** Every permutation consistent with real time (a.ret < b.call ⇒ a before b), replayed on the model. */
function bruteForce(ops: Op[]): boolean {
  const n = ops.length;
  const used = new Array<boolean>(n).fill(false);
  const order: number[] = [];
  const rec = (): boolean => {
    if (order.length === n) {
      let st = "";
      for (const i of order) {
        const r = kvModel.step(st, ops[i]!.input, ops[i]!.output);
        if (!r.ok) return false;
        st = r.next;
      }
      return true;
    }
    for (let i = 0; i < n; i++) {
      if (used[i]) continue;
      // i may go next only if no unplaced op finished strictly before i began
      if (ops.some((o, j) => !used[j] && j !== i && o.ret < ops[i]!.call)) continue;
      used[i] = true;
      order.push(i);
      if (rec()) return true;
      order.pop();
      used[i] = false;
    }
    return false;
  };
  return rec();
}
