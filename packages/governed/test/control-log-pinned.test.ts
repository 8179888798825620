/**
 * The control log's format and decisions, pinned (governed.md §3.1: "Schema evolution MUST bump `v` and keep
 * decoders for every older `v`"). A log written by one build is replayed by every later build — after an upgrade,
 * on a new member catching up, from a snapshot's suffix — and each must decide every old entry exactly as it was
 * decided when its caller got the answer. A review found several decision changes that had gone in under the same
 * `v` (a release's optional token, the retire digest, hashed mint ids, the `idem:` window, the purge of lapsed
 * claims): nothing failed when they did.
 *
 * So this file fixes one log of every op, in both envelope versions, with retries, key misuse and refusals, and
 * pins (a) each entry's outcome in readable form and (b) a SHA-256 over the encoded entries, every outcome, every
 * published patch and the final state text. A change that moves any of them changes how an existing log replays:
 * if it is meant, give it a new envelope version (or snapshot format) that gates the new rule, keep the old rule
 * for old entries, and only then extend this file with entries of the new version — never re-pin an old one.
 */
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { ControlState, encodeEnvelope, outcomeJson } from "../src/index.ts";
import { canonicalJson, type Canonical } from "../src/control/canonical-json.ts";
import { canonicalClaims, controlSettings } from "../src/control/control-settings.ts";
import type { ControlCommand, LogEntry, ProposalKey } from "../src/index.ts";

const root = GroupId("root");
const claims = { capacity: { pool: 2 } };
const settings = controlSettings(root, canonicalClaims(claims), 10_000);
const rec = (id: string, parent: string, child: string, w: bigint) => ({ id: AttachmentId(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(w) });
const take = (holder: string, key: string, mode: "exclusive" | "shared" = "exclusive", extra: { scope?: string; ttlMs?: number } = {}) =>
  ({ op: "claims.take", request: { holder, resources: [{ key, mode }], ttlMs: extra.ttlMs ?? 60_000, ...(extra.scope !== undefined ? { scope: extra.scope } : {}) } }) as ControlCommand;

/** The pinned log: [version, key, command, stampedAt]. Version 1 entries are what builds before settings wrote. */
const LOG: readonly (readonly [1 | 2, ProposalKey | null, ControlCommand, number])[] = [
  [1, { client: "op", seq: 1 }, { op: "enroll", replica: ReplicaId("n1") }, 1_000],
  [1, { client: "op", seq: 2 }, { op: "mint", holder: ReplicaId("n1"), amount: 1_000n }, 1_001],
  [1, { client: "op", seq: 2 }, { op: "mint", holder: ReplicaId("n1"), amount: 1_000n }, 1_002], // a retry: index 2's outcome again
  [1, { client: "op", seq: 3 }, { op: "prepare", record: rec("e1", "root", "a", 3n) }, 1_003],
  [1, { client: "op", seq: 4 }, { op: "activate", edge: AttachmentId("e1") }, 1_004],
  [1, { client: "op", seq: 5 }, { op: "activate", edge: AttachmentId("nope") }, 1_005], // unknown edge
  [1, { client: "w", seq: 1 }, take("h1", "lock"), 2_000],
  [1, { client: "w", seq: 2 }, take("h2", "lock"), 2_001], // held by h1: refused
  [1, { client: "w", seq: 3 }, { op: "claims.renew", holder: "h1", key: "lock" }, 2_002],
  [1, { client: "w", seq: 4 }, { op: "claims.release", holder: "h1", key: "lock" }, 2_003],
  [2, { client: "w", seq: 5 }, take("h2", "lock"), 2_004], // the first v2 entry fixes the settings
  [2, { client: "w", seq: 6 }, { op: "claims.release", holder: "h2", key: "lock", token: 7 }, 2_005], // a stale token
  [2, { client: "w", seq: 7 }, { op: "claims.release", holder: "h2", key: "lock", token: 11 }, 2_006],
  [2, { client: "w", seq: 8 }, take("p1", "pool", "shared", { scope: "job" }), 2_007],
  [2, { client: "w", seq: 9 }, take("p2", "pool", "shared", { scope: "job" }), 2_008],
  [2, { client: "w", seq: 10 }, take("p3", "pool", "shared"), 2_009], // capacity 2: refused
  [2, { client: "w", seq: 11 }, { op: "claims.releaseScope", scope: "job" }, 2_010],
  [2, { client: "w", seq: 12 }, take("h3", "short", "exclusive", { ttlMs: 1_000 }), 3_000],
  [2, { client: "w", seq: 13 }, take("h4", "short"), 4_500], // h3's lease lapsed at 4 000: granted
  [2, { client: "w", seq: 14 }, { op: "claims.releaseAll", holder: "h4" }, 4_501],
  [2, { client: "idem:k", seq: 1 }, { op: "mint", holder: ReplicaId("n1"), amount: 5n }, 5_000],
  [2, { client: "idem:k", seq: 1 }, { op: "enroll", replica: ReplicaId("n2") }, 5_001], // key misuse
  [2, { client: "op", seq: 6 }, { op: "enroll", replica: ReplicaId("n2") }, 5_002],
  [2, { client: "op", seq: 7 }, { op: "prepare", record: rec("e2", "a", "b", 1n) }, 5_003],
  [2, { client: "op", seq: 8 }, { op: "retire", edge: AttachmentId("e2") }, 5_004], // retire from PREPARED
  [2, { client: "op", seq: 9 }, { op: "close", edge: AttachmentId("e1") }, 5_005],
  [2, null, { op: "barrier" }, 5_006],
  [2, { client: "op", seq: 10 }, { op: "depart", replica: ReplicaId("n2") }, 5_007], // proposed by n1 for n2: notSelf
  [2, { client: "op", seq: 11 }, { op: "mint", holder: ReplicaId("n1"), amount: (1n << 63n) - 1n }, 5_008], // total overflows
];

function replay(): { outcomes: (Canonical | null)[]; digest: string } {
  const st = new ControlState({ root, claims });
  const h = createHash("sha256");
  const outcomes: (Canonical | null)[] = [];
  LOG.forEach(([v, key, cmd, stampedAt], i) => {
    const command = encodeEnvelope(v === 1 ? { v, key, ackFloor: 0, proposer: ReplicaId("n1"), cmd } : { v, key, ackFloor: 0, proposer: ReplicaId("n1"), cmd, settings });
    const entry: LogEntry = { index: i + 1, term: 1, kind: "app", key, command, stampedAt };
    const step = st.apply({ kind: "entry", entry });
    h.update(command);
    h.update(step.outcome === undefined || step.outcome === null ? "-" : canonicalJson(outcomeJson(step.outcome)));
    for (const p of step.publish) h.update(p.encodeBinary());
    outcomes.push(step.outcome === undefined || step.outcome === null ? null : outcomeJson(step.outcome));
  });
  h.update(st.stateText());
  return { outcomes, digest: h.digest("hex") };
}

describe("the control log, replayed as pinned (§3.1: a decision change needs a new version)", () => {
  it("decides every pinned entry as it was decided", () => {
    // each entry's outcome as governed.md §3.3–3.4 and claims.md decide it (the barrier has none)
    expect(replay().outcomes.map((o) => (o === null ? null : JSON.stringify(o)))).toEqual([
      '{"kind":"applied","index":1,"key":{"client":"op","seq":1},"noop":false}',  // 1
      '{"kind":"applied","index":2,"key":{"client":"op","seq":2},"noop":false,"mintId":"mint:op:2"}',  // 2
      '{"kind":"applied","index":2,"key":{"client":"op","seq":2},"noop":false,"mintId":"mint:op:2"}',  // 3
      '{"kind":"applied","index":4,"key":{"client":"op","seq":3},"noop":false}',  // 4
      '{"kind":"applied","index":5,"key":{"client":"op","seq":4},"noop":false}',  // 5
      '{"kind":"conflict","index":6,"key":{"client":"op","seq":5},"conflict":{"reason":"unknownEdge","edge":"nope"}}',  // 6
      '{"kind":"applied","index":7,"key":{"client":"w","seq":1},"noop":false,"claims":{"ok":true,"grants":[{"key":"lock","mode":"exclusive","token":7,"existing":false}],"superseded":[]}}',  // 7
      '{"kind":"applied","index":8,"key":{"client":"w","seq":2},"noop":false,"claims":{"ok":false,"blocked":[{"key":"lock","capacity":1,"reason":"held","holders":["h1"]}]}}',  // 8
      '{"kind":"applied","index":9,"key":{"client":"w","seq":3},"noop":false,"claims":true}',  // 9
      '{"kind":"applied","index":10,"key":{"client":"w","seq":4},"noop":false,"claims":true}',  // 10
      '{"kind":"applied","index":11,"key":{"client":"w","seq":5},"noop":false,"claims":{"ok":true,"grants":[{"key":"lock","mode":"exclusive","token":11,"existing":false}],"superseded":[]}}',  // 11
      '{"kind":"applied","index":12,"key":{"client":"w","seq":6},"noop":false,"claims":false,"heldToken":11}',  // 12
      '{"kind":"applied","index":13,"key":{"client":"w","seq":7},"noop":false,"claims":true}',  // 13
      '{"kind":"applied","index":14,"key":{"client":"w","seq":8},"noop":false,"claims":{"ok":true,"grants":[{"key":"pool","mode":"shared","token":14,"existing":false}],"superseded":[]}}',  // 14
      '{"kind":"applied","index":15,"key":{"client":"w","seq":9},"noop":false,"claims":{"ok":true,"grants":[{"key":"pool","mode":"shared","token":15,"existing":false}],"superseded":[]}}',  // 15
      '{"kind":"applied","index":16,"key":{"client":"w","seq":10},"noop":false,"claims":{"ok":false,"blocked":[{"key":"pool","capacity":2,"reason":"capacity","holders":["p1","p2"]}]}}',  // 16
      '{"kind":"applied","index":17,"key":{"client":"w","seq":11},"noop":false,"claims":["pool","pool"]}',  // 17
      '{"kind":"applied","index":18,"key":{"client":"w","seq":12},"noop":false,"claims":{"ok":true,"grants":[{"key":"short","mode":"exclusive","token":18,"existing":false}],"superseded":[]}}',  // 18
      '{"kind":"applied","index":19,"key":{"client":"w","seq":13},"noop":false,"claims":{"ok":true,"grants":[{"key":"short","mode":"exclusive","token":19,"existing":false}],"superseded":[{"key":"short","holder":"h3","mode":"exclusive","token":18,"since":3000,"expiresAt":4000,"why":"lease-lapsed"}]}}',  // 19
      '{"kind":"applied","index":20,"key":{"client":"w","seq":14},"noop":false,"claims":["short"]}',  // 20
      '{"kind":"applied","index":21,"key":{"client":"idem:k","seq":1},"noop":false,"mintId":"mint:idem:k:1"}',  // 21
      '{"kind":"conflict","index":22,"key":{"client":"idem:k","seq":1},"conflict":{"reason":"keyReuse","key":{"client":"idem:k","seq":1}}}',  // 22
      '{"kind":"applied","index":23,"key":{"client":"op","seq":6},"noop":false}',  // 23
      '{"kind":"applied","index":24,"key":{"client":"op","seq":7},"noop":false}',  // 24
      '{"kind":"applied","index":25,"key":{"client":"op","seq":8},"noop":false}',  // 25
      '{"kind":"applied","index":26,"key":{"client":"op","seq":9},"noop":false}',  // 26
      null,  // 27
      '{"kind":"conflict","index":28,"key":{"client":"op","seq":10},"conflict":{"reason":"notSelf","replica":"n2","proposer":"n1"}}',  // 28
      '{"kind":"conflict","index":29,"key":{"client":"op","seq":11},"conflict":{"reason":"overflow","what":"mintedTotal"}}',  // 29
    ]);
  });

  it("replays to the same bytes, outcomes, patches and state (SHA-256 pinned)", () => {
    const { digest } = replay();
    // see the file comment before changing this value: an existing log would replay differently
    expect(digest).toBe("d7c7b004c2f2eb90bb6387de00c6bf60ea61b152772842ad90d1bbef269cc5e9");
  });
});
