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
};
