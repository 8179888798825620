/**
 * Leadership transfer details (governed.md R-T1–R-T3), on scripted clusters:
 *
 * - the leader sends TimeoutNow only once the target holds its whole log *and* that log is committed: in five
 *   voters the target's acknowledgement alone is not a majority, so the order waits for a third copy;
 * - a node obeys TimeoutNow only from the leader it follows in the current term: after a restart it knows no leader
 *   and refuses the order; the leader's next heartbeat makes it a follower again and the TimeoutNow re-sent with that
 *   heartbeat starts its campaign (traced once as `transferCampaign` for the next term; the re-send is not traced
 *   as a second `timeoutNowSent`);
 * - while a transfer runs the leader holds at most `maxPendingProposals` proposals (local or forwarded); the next
 *   one is refused at once.
 */
import { describe, expect, it } from "vitest";
import type { Message, Ready, RaftTraceEvent } from "../src/index.ts";
import { sent, sentTo } from "./support/hand-driven.ts";
import { Script } from "./support/script.ts";

function ofType(rd: Ready, type: RaftTraceEvent["type"]): RaftTraceEvent[] {
  return rd.trace.filter((t) => t.type === type);
}
function timeoutNows(rd: Ready, to: string): Message[] {
  return sentTo(rd, to).filter((m) => m.type === "timeoutNow");
}

describe("TimeoutNow waits until the target's log is committed (R-T1)", () => {
  it("five voters: the target alone has the last entry, so no TimeoutNow; a third copy commits it and the order goes out", () => {
    const s = new Script(["a", "b", "c", "d", "e"]);
    s.elect("a");
    const a = s.core("a");
    const term = a.term;
    s.propose("a", new Uint8Array([1]));
    s.flush("a");
    // only b receives and acknowledges the new entry; the copies for c, d and e stay in flight
    s.deliver((m) => m.to === "b");
    s.flush("b");
    s.deliver((m) => m.to === "a");
    s.flush("a");
    expect(a.commitIndex).toBe(a.lastIndex - 1);

    a.transferLeadership(1, "b");
    let rd = s.flush("a");
    expect(ofType(rd, "transferStart")).toHaveLength(1);
    expect(timeoutNows(rd, "b")).toEqual([]);
    expect(ofType(rd, "timeoutNowSent")).toEqual([]);

    // c's acknowledgement makes a majority (a, b, c): the entry commits, and b, holding all of it, gets the order
    s.deliver((m) => m.to === "c");
    s.flush("c");
    s.deliver((m) => m.to === "a");
    rd = s.flush("a");
    expect(a.commitIndex).toBe(a.lastIndex);
    expect(timeoutNows(rd, "b")).toEqual([{ type: "timeoutNow", term }]);
    expect(ofType(rd, "timeoutNowSent")).toEqual([{ type: "timeoutNowSent", target: "b", term, generation: 1 }]);
  });
});

describe("TimeoutNow is obeyed only from the leader followed in this term (R-T3)", () => {
  it("a restarted target refuses it; after the leader's heartbeat the re-sent order starts its campaign, traced once", () => {
    const s = new Script(["a", "b", "c"]);
    s.elect("a");
    const a = s.core("a");
    const term = a.term;
    // b restarts from its disk: same term and log, but no leader known yet
    const b = s.start("b");
    expect([b.state, b.leader, b.term]).toEqual(["follower", null, term]);

    a.transferLeadership(1, "b");
    let rd = s.flush("a");
    expect(timeoutNows(rd, "b")).toEqual([{ type: "timeoutNow", term }]);
    expect(ofType(rd, "timeoutNowSent")).toEqual([{ type: "timeoutNowSent", target: "b", term, generation: 1 }]);
    s.deliver((m) => m.to === "b");
    rd = s.flush("b");
    expect(rd.trace).toEqual([{ type: "frameRefused", from: "a", reason: "timeout-now-not-from-leader" }]);
    expect(sent(rd)).toEqual([]);
    expect([b.state, b.term, b.refusedFrames.get("timeout-now-not-from-leader")]).toEqual(["follower", term, 1]);

    // the heartbeat comes first, then the re-sent TimeoutNow
    s.now += s.cfg.heartbeatMs;
    a.tick(s.now);
    rd = s.flush("a");
    expect(sentTo(rd, "b").map((m) => m.type).filter((t) => t === "append" || t === "timeoutNow").slice(-2)).toEqual(["append", "timeoutNow"]);
    expect(timeoutNows(rd, "b")).toEqual([{ type: "timeoutNow", term }]);
    expect(ofType(rd, "timeoutNowSent"), "the re-send is not a second timeoutNowSent").toEqual([]);
    s.deliver((m) => m.to === "b");
    rd = s.flush("b");
    expect(ofType(rd, "transferCampaign")).toEqual([{ type: "transferCampaign", from: "a", term: term + 1 }]);
    expect([b.state, b.term]).toEqual(["candidate", term + 1]);
  });
});

describe("the proposals a transferring leader holds are capped (R-T2, R-F2)", () => {
  it("maxPendingProposals 2: two are held, the third local one is refused overloaded and a forward answered failed", () => {
    const s = new Script(["a", "b", "c"], { maxPendingProposals: 2 });
    s.elect("a");
    const a = s.core("a");
    const last = a.lastIndex;
    a.transferLeadership(1, "b");
    s.flush("a");
    s.inflight = []; // the TimeoutNow is lost: the transfer keeps running
    a.propose(2, new Uint8Array([2]), null);
    a.propose(3, new Uint8Array([3]), null);
    a.propose(4, new Uint8Array([4]), null);
    a.step("c", { type: "forward", corrId: 9, key: null, command: new Uint8Array([9]) });
    const rd = s.flush("a");
    expect(rd.outcomes).toEqual([{ id: 4, ok: false, refusal: "overloaded" }]);
    expect(sentTo(rd, "c")).toEqual([{ type: "forwardReply", corrId: 9, outcome: "failed", index: 0, term: 0 }]);
    expect(a.lastIndex).toBe(last);
    expect(a.transfer?.target).toBe("b");
  });

  it("with one fewer held, a proposal is still held (not refused) until the transfer ends", () => {
    const s = new Script(["a", "b", "c"], { maxPendingProposals: 2 });
    s.elect("a");
    const a = s.core("a");
    a.transferLeadership(1, "b");
    s.flush("a");
    s.inflight = [];
    a.propose(2, new Uint8Array([2]), null);
    a.step("c", { type: "forward", corrId: 9, key: null, command: new Uint8Array([9]) });
    const rd = s.flush("a");
    expect(rd.outcomes).toEqual([]);
    expect(sent(rd)).toEqual([]);
  });
});
