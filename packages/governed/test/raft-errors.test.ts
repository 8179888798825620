/**
 * The errors the Raft node rejects calls with (governed.md §4.1) are told apart by class and by `name` — the
 * control plane's retry loop retries `LeadershipLostError` and everything that is one (§3.10: `NotLeaderError`
 * during a transfer), and logs print `name: message`. Each is named for itself.
 */
import { describe, expect, it } from "vitest";
import {
  InvalidMembershipError,
  LeadershipLostError,
  LeadershipTransferError,
  MembershipChangeInProgressError,
  NodeShutdownError,
  NotLeaderError,
  OverloadedError,
  PayloadTooLargeError,
  ProposalAbortedError,
  RaftConfigError,
  RaftRestoreError,
  raftConfig,
} from "../src/index.ts";

describe("Raft errors (governed.md §4.1)", () => {
  it("each is an Error named for its class, and prints as `name: message`", () => {
    const all: [new (m: string) => Error, string][] = [
      [LeadershipLostError, "LeadershipLostError"],
      [NotLeaderError, "NotLeaderError"],
      [PayloadTooLargeError, "PayloadTooLargeError"],
      [MembershipChangeInProgressError, "MembershipChangeInProgressError"],
      [InvalidMembershipError, "InvalidMembershipError"],
      [NodeShutdownError, "NodeShutdownError"],
      [OverloadedError, "OverloadedError"],
      [ProposalAbortedError, "ProposalAbortedError"],
      [RaftRestoreError, "RaftRestoreError"],
      [RaftConfigError, "RaftConfigError"],
    ];
    for (const [Cls, name] of all) {
      const e = new Cls("why");
      expect(e).toBeInstanceOf(Error);
      expect(e.name).toBe(name);
      expect(String(e)).toBe(`${name}: why`);
    }
    const t = new LeadershipTransferError("timed-out", "target n3 did not take over");
    expect(t.name).toBe("LeadershipTransferError");
    expect(t.reason).toBe("timed-out");
    expect(t.message).toBe("target n3 did not take over");
  });

  it("NotLeaderError is a LeadershipLostError, so a retry loop that retries one retries the other; the rest are not", () => {
    expect(new NotLeaderError("x")).toBeInstanceOf(LeadershipLostError);
    for (const e of [new PayloadTooLargeError("x"), new NodeShutdownError("x"), new OverloadedError("x"), new ProposalAbortedError("x")])
      expect(e).not.toBeInstanceOf(LeadershipLostError);
  });
});

describe("raftConfig refusals (governed.md §4.1 table)", () => {
  it("the commit notice must come sooner than the heartbeat: commitNoticeMs < heartbeatMs, both ends", () => {
    expect(() => raftConfig({ commitNoticeMs: 50 })).toThrow(new RaftConfigError("commitNoticeMs (50) must be < heartbeatMs (50)"));
    expect(() => raftConfig({ heartbeatMs: 20, commitNoticeMs: 20 })).toThrow(RaftConfigError);
    expect(raftConfig({ commitNoticeMs: 49 }).commitNoticeMs).toBe(49);
    expect(raftConfig({ commitNoticeMs: 0 }).commitNoticeMs).toBe(0);
  });
});
