/**
 * The leader's bound on forwarded proposals in flight (governed.md R-F1, R-F2): a leader already holding
 * `maxPendingProposals` forwarded proposals that have not committed answers the next forward `Failed` (the
 * follower's caller sees `leadership-lost`, the driver's retryable LeadershipLostError) and appends nothing; with one
 * fewer pending the forward is appended under the proposer's key; once the pending ones commit, a retry of the
 * refused proposal under the same key is appended and committed exactly once.
 */
import { describe, expect, it } from "vitest";
import type { Ready } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { Script } from "./support/script.ts";

const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });
const sent = (rd: Ready): unknown[] => [...rd.earlyMessages, ...rd.messages].map((m) => ({ to: m.to, ...m.message }));
const seqsOf = (s: Script, id: string): number[] => s.core(id).entries.filter((e) => e.key?.client === "w").map((e) => e.key!.seq);

describe("a leader's cap on forwarded proposals not yet committed (R-F2)", () => {
  it("with exactly the cap pending a forward is answered failed and appends nothing; with one fewer it is appended; after the commit a retry is appended", () => {
    const s = new Script(["a", "b", "c"], { maxPendingProposals: 2 });
    s.elect("a"); // stabilized: the no-op committed everywhere, nothing pending
    const a = s.core("a");
    const base = a.lastIndex;
    const p1 = s.propose("b", put("k1", "v"), { client: "w", seq: 1 });
    const p2 = s.propose("b", put("k2", "v"), { client: "w", seq: 2 });
    const p3 = s.propose("b", put("k3", "v"), { client: "w", seq: 3 });
    s.flush("b");
    const forwardOf = (id: number) => (m: { message: { type: string; corrId?: number } }) => m.message.type === "forward" && m.message.corrId === id;

    expect(s.deliver(forwardOf(p1))).toBe(1); // none pending: appended
    expect(a.lastIndex).toBe(base + 1);
    expect(s.deliver(forwardOf(p2))).toBe(1); // one pending (cap − 1): appended
    expect(a.lastIndex).toBe(base + 2);
    expect(sent(s.flush("a")).filter((m) => (m as { type: string }).type === "forwardReply")).toEqual([]); // not committed yet
    expect(a.commitIndex).toBe(base);

    expect(s.deliver(forwardOf(p3))).toBe(1); // two pending (the cap): refused
    const rd = s.flush("a");
    expect(sent(rd)).toEqual([{ to: "b", type: "forwardReply", corrId: p3, outcome: "failed", index: 0, term: 0 }]);
    expect(rd.storage).toEqual([]);
    expect(a.lastIndex).toBe(base + 2);
    expect(seqsOf(s, "a")).toEqual([1, 2]);

    s.deliver((m) => m.message.type === "forwardReply");
    s.flush("b");
    expect(s.outcomes.get(p3)).toEqual({ id: p3, ok: false, refusal: "leadership-lost" });
    expect(s.outcomes.has(p1)).toBe(false);

    s.stabilize();
    const term = a.term;
    expect(a.commitIndex).toBe(base + 2);
    expect(s.outcomes.get(p1)).toEqual({ id: p1, ok: true, index: base + 1, term });
    expect(s.outcomes.get(p2)).toEqual({ id: p2, ok: true, index: base + 2, term });

    const retry = s.propose("b", put("k3", "v"), { client: "w", seq: 3 }); // nothing pending any more
    s.stabilize();
    expect(s.outcomes.get(retry)).toEqual({ id: retry, ok: true, index: base + 3, term });
    expect(seqsOf(s, "a")).toEqual([1, 2, 3]);
    expect(s.kvs.get("b")!.data.get("k3")).toBe("v");
  });

  it("a cap of one: the first forward is appended, a second arriving before it commits is refused", () => {
    const s = new Script(["a", "b", "c"], { maxPendingProposals: 1 });
    s.elect("a");
    const a = s.core("a");
    const base = a.lastIndex;
    const p1 = s.propose("c", put("x", "1"), { client: "w", seq: 1 });
    const p2 = s.propose("b", put("y", "1"), { client: "w", seq: 2 });
    s.flush("c");
    s.flush("b");
    s.deliver((m) => m.message.type === "forward" && m.from === "c");
    s.deliver((m) => m.message.type === "forward" && m.from === "b");
    const rd = s.flush("a");
    expect(sent(rd).filter((m) => (m as { type: string }).type === "forwardReply")).toEqual([
      { to: "b", type: "forwardReply", corrId: p2, outcome: "failed", index: 0, term: 0 },
    ]);
    expect(a.lastIndex).toBe(base + 1);
    s.stabilize();
    expect(s.outcomes.get(p1)).toEqual({ id: p1, ok: true, index: base + 1, term: a.term });
    expect(s.outcomes.get(p2)).toEqual({ id: p2, ok: false, refusal: "leadership-lost" });
    expect(seqsOf(s, "a")).toEqual([1]);
  });
});
