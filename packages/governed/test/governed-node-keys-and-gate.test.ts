/**
 * The governed node's answers per key and its writer gate (governed.md §3.9, §3.10), on one member over a stub log:
 * - a replayed old enroll(self) after depart() does not reopen the writer gate;
 * - two calls under one key with different commands each get the answer for their own command (`keyReuse` for the
 *   second), and neither moves the gate unless its own enroll applied.
 * Both were found in review (2026-12-04); each test fails on the code before the fix.
 */
import { afterEach, describe, expect, it } from "vitest";
import { r } from "./support/governed-cluster.ts";
import { Single } from "./support/single.ts";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const f of cleanups.splice(0)) await f();
});
const single = (): Single => {
  const s = new Single();
  cleanups.push(() => s.shutdown());
  return s;
};

describe("the writer gate (§3.9) and answers per key (§3.10)", () => {
  it("a replayed old enroll(self) after depart() does not reopen the writer gate", async () => {
    const s = single();
    const key = { client: "ops", seq: 1 };
    expect((await s.settle(s.gov.enroll(r("n1"), { key }))).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(true);
    expect((await s.settle(s.gov.depart())).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(false);
    const again = await s.settle(s.gov.enroll(r("n1"), { key }));
    expect(again).toMatchObject({ kind: "applied", index: 1 }); // the recorded outcome, replayed
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false);
    // a fresh enroll opens it again
    expect((await s.settle(s.gov.enroll(r("n1")))).kind).toBe("applied");
    expect(s.gov.isWritable).toBe(true);
  });

  it("two concurrent calls under one key with different commands: each gets its own command's answer", async () => {
    const s = single();
    const key = { client: "idem:abc", seq: 1 };
    const [m, en] = await s.settle(Promise.all([s.gov.mint(r("n1"), 100n, { key }), s.gov.enroll(r("n1"), { key })]));
    expect(m).toMatchObject({ kind: "applied", mintId: "mint:idem:abc:1" });
    expect(en).toMatchObject({ kind: "conflict", conflict: { reason: "keyReuse" } });
    expect(s.gov.enrolledReplicas().has(r("n1"))).toBe(false);
    expect(s.gov.isWritable).toBe(false);
    // and a retry of the mint under its key still gets the mint's outcome
    expect(await s.settle(s.gov.mint(r("n1"), 100n, { key }))).toMatchObject({ kind: "applied", mintId: "mint:idem:abc:1" });
  });
});
