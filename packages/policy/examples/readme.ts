// packages/policy/examples/readme.ts — run from the repository root:
//   npx -y pnpm@10 exec node packages/policy/examples/readme.ts
import { AttachmentId, GroupId, Rational, Weight } from "@heddle/ledger";
import { HeddlePolicy } from "@heddle/policy";
import type { PolicyEdge } from "@heddle/policy";

function child(id: string, weight: Weight, issued: bigint): PolicyEdge {
  const a = AttachmentId(id);
  return {
    record: { id: a, parent: GroupId("root"), child: GroupId(id), weight },
    summary: { attachment: a, issued, returned: 0n, spent: issued, outstanding: 0n, committedService: issued },
    demand: { targetOutstanding: 100n, maximumUsefulGrant: 100n },
    gauge: { floor: Rational.ZERO, folded: 0n },
    baseIssued: issued,
    virtualOffset: Rational.ZERO,
  };
}

const edges = [child("interactive", Weight.of(3n), 0n), child("batch", Weight.of(1n), 0n)];
console.log(HeddlePolicy.pick(edges, { quantum: 4n }, 40n));        // { attachment: 'interactive', amount: 4n }
const grants = HeddlePolicy.allocate(edges, { quantum: 4n }, 40n, 1000);
console.log(grants.map((g) => `${g.attachment}:${g.amount}`).join(" "));
// interactive:4 batch:4 interactive:4 interactive:4 interactive:4 batch:4 … — 28 of 40 units to interactive,
// 12 to batch: within one quantum of the 3:1 share (30/10)
console.log(HeddlePolicy.front(edges)?.toString());                  // 0/1: where a newborn would be seated
