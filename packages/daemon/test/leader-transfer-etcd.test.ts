// A leader transfer on a peer whose control log is on etcd is refused with an error the API maps by name (409
// transfer-failed, reason "etcd"), without an etcd: the end-to-end answer is checked in etcd-mode.test.ts.
import { describe, expect, it } from "vitest";
import type { ControlLog } from "@heddle/governed";
import { WatchCell } from "@heddle/node";
import { EtcdLeadershipTransferError, governedControlPlane, type GovernedNodeLike } from "../src/governed-peer.ts";

describe("leader transfer on the etcd control log", () => {
  it("throws a LeadershipTransferError-named error with reason etcd, saying to use etcdctl move-leader", async () => {
    // an etcd-shaped log: no membership, no transferLeadership (governedControlPlane tells the two apart by those)
    const etcdLog = { role: new WatchCell("follower"), leader: new WatchCell(null) } as unknown as ControlLog;
    const cp = governedControlPlane({ claims: {} } as unknown as GovernedNodeLike, etcdLog);
    const err = await cp.transferLeadership("someone", { timeoutMs: 1_000 }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(EtcdLeadershipTransferError);
    expect(err).toMatchObject({ name: "LeadershipTransferError", reason: "etcd", message: expect.stringMatching(/mode\.etcd.*etcdctl move-leader/) });
  });
});
