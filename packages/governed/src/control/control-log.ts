/**
 * The `ControlLog` seam (issue 18): what the control state machine needs from the log under it. The control state is
 * a pure function of the committed prefix (governed.md §3.5), so any log that hands every member the same ordered
 * prefix, each index exactly once, can carry it: the embedded Raft (`RaftNode` satisfies this interface as it is)
 * and an existing etcd cluster (`etcdControlLog`).
 */
import type { Watch } from "@heddle/node";
import type { RaftNode } from "../raft/node.ts";

/**
 * The log under `heddleGoverned`: propose keyed entries, replay and tail the committed prefix, a linearizable read
 * index, snapshots, and close. `role`/`leader` steer `sync()` and the propose retry budget; a log whose every member
 * can answer `readIndex` reports `role` `"leader"`.
 */
export type ControlLog = Pick<RaftNode, "id" | "role" | "leader" | "propose" | "committedFrom" | "readIndex" | "publishSnapshot" | "close"> & {
  /**
   * Optional: `false` while the log cannot reach its consensus service, in which case the governed node's writer
   * gate stays closed (fail-closed, issue 18). The embedded Raft has none: a partitioned Raft member keeps writing
   * its data plane (governed.md §3.11).
   */
  readonly available?: Watch<boolean>;
  /**
   * Optional: the earliest stamp a command proposed from now on can carry, as far as this member has seen — for a
   * log that clamps a new entry's stamp to the newest one before it (etcd). A read that judges claims must not judge
   * earlier than this: after a snapshot install the applied state's `latestStamp` can lag it (the snapshot keeps
   * only `claimsNow`), and a lease judged live at an earlier time could be lapsed for the log. Raised by every
   * confirmed `readIndex`, so after one it covers every entry appended before the read. The embedded Raft stamps
   * with its leader's clock, unclamped, and needs none.
   */
  stampFloor?(): number;
};
