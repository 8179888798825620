/**
 * A leadership transfer's target stays a voter for as long as the transfer runs (governed.md R-T1, R-M1, R-M2):
 * while a transfer runs the leader refuses configuration changes (`transferring`), so nothing can remove or demote
 * the target under it, and the target still takes over once it catches up; a removal appended before the transfer
 * is already in force (a config takes effect when appended), so a transfer to the removed voter is refused
 * `invalid-target` at once — before and after the removal commits — with no transfer started and no TimeoutNow.
 * These pin the invariant that leaves #maybeSendTimeoutNow's "target no longer a voter" branch unreachable.
 */
import { describe, expect, it } from "vitest";
import type { RaftTraceEvent, Ready } from "../src/index.ts";
import { kvCommand } from "./support/kv-machine.ts";
import { isolate, Script } from "./support/script.ts";

const ABC = ["a", "b", "c"];
const put = (k: string, v: string): Uint8Array => kvCommand({ op: "put", key: k, value: v });
const transferEvents = (t: readonly RaftTraceEvent[]): RaftTraceEvent[] =>
  t.filter((e) => e.type === "transferStart" || e.type === "transferEnd" || e.type === "timeoutNowSent");
const timeoutNows = (rd: Ready): unknown[] => [...rd.earlyMessages, ...rd.messages].filter((m) => m.message.type === "timeoutNow");

describe("the transfer target cannot stop being a voter while the transfer runs (R-T1, R-M1)", () => {
  it("removing or demoting the target during the transfer is refused 'transferring'; the config stays and the target takes over once caught up", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const cutB = isolate(["b"]);
    s.propose("a", put("k", "1"), { client: "w", seq: 1 });
    s.stabilize(cutB); // committed by a and c; b lags, so the transfer waits for it
    const t = s.nextId++;
    const term = a.term;
    a.transferLeadership(t, "b");
    s.stabilize(cutB);
    expect(a.transfer).toMatchObject({ target: "b", term });
    const [remove, demote] = [s.nextId++, s.nextId++];
    const last = a.lastIndex;
    a.changeMembership(remove, { voters: ["a", "c"], learners: [] });
    a.changeMembership(demote, { voters: ["a", "c"], learners: ["b"] });
    s.flush("a");
    expect(s.outcomes.get(remove)).toEqual({ id: remove, ok: false, refusal: "transferring" });
    expect(s.outcomes.get(demote)).toEqual({ id: demote, ok: false, refusal: "transferring" });
    expect(a.config).toEqual({ voters: ABC, learners: [] });
    expect(a.lastIndex).toBe(last);
    expect(transferEvents(s.traces.get("a")!).map((e) => e.type)).toEqual(["transferStart"]); // still waiting for b
    s.advance(2 * s.cfg.heartbeatMs); // the cut heals: a heartbeat finds b behind, b catches up, gets TimeoutNow, wins
    expect(s.outcomes.get(t)).toMatchObject({ id: t, ok: true });
    expect(transferEvents(s.traces.get("a")!)).toEqual([
      { type: "transferStart", target: "b", term, generation: 1 },
      { type: "timeoutNowSent", target: "b", term, generation: 1 },
      { type: "transferEnd", target: "b", generation: 1, outcome: "succeeded" },
    ]);
    expect(s.core("b").state).toBe("leader");
  });

  it("a removal appended before the transfer is already in force: the transfer to the removed voter is refused 'invalid-target' at once, uncommitted or committed, and no TimeoutNow goes out", () => {
    const s = new Script(ABC);
    s.elect("a");
    const a = s.core("a");
    const remove = s.nextId++;
    a.changeMembership(remove, { voters: ["a", "c"], learners: [] });
    s.flush("a"); // appended and sent, not committed
    expect(a.config.voters).toEqual(["a", "c"]);
    expect(a.commitIndex).toBeLessThan(a.configIndex);
    const early = s.nextId++;
    a.transferLeadership(early, "b");
    const rd = s.flush("a");
    expect(s.outcomes.get(early)).toEqual({ id: early, ok: false, refusal: "transfer-invalid-target" });
    expect(a.transfer).toBeNull();
    expect(timeoutNows(rd)).toEqual([]);
    s.stabilize();
    expect(s.outcomes.get(remove)).toMatchObject({ id: remove, ok: true });
    const late = s.nextId++;
    a.transferLeadership(late, "b");
    s.flush("a");
    expect(s.outcomes.get(late)).toEqual({ id: late, ok: false, refusal: "transfer-invalid-target" });
    expect(a.transfer).toBeNull();
    expect(transferEvents(s.traces.get("a")!)).toEqual([]);
    expect(s.inflight.some((m) => m.message.type === "timeoutNow")).toBe(false);
    expect(a.state).toBe("leader");
  });
});
