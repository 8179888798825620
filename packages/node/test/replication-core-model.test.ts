/**
 * Model-based test of the replication core alone (issue 14): three `ReplicationCore`s and their replicas,
 * no seam, no driver, no timers — the test is the network and the clock. fast-check drives random command
 * sequences: local publishes, delivery of any in-flight message in any order, drops, duplicates, time
 * passing, crashes and restarts with a new incarnation. Throughout, every core must respect the limits of
 * node.md §5.5 (buffered deltas ≤ maxPendingDeltas, tracked out-of-order seqs ≤ maxTrackedSeqs, a resend
 * served from the buffer ≤ maxResendSpan deltas, known peers ⊆ the roster); after a lossless heal every
 * replica must equal genesis ⊔ every patch any peer published — no more, no less — with anti-entropy on,
 * and with it off (then acks, cursors, resends, tail re-offers and handshakes alone must get there).
 */
import { AttachmentId, GroupId, LedgerReplica, ReplicaId, Weight, type EntitlementLedger } from "@heddle/ledger";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { REPLICATION_DEFAULTS, ReplicationCore, type LedgerMessage, type ReplicationConfig } from "../src/testing.ts";
import { simGenesis } from "./replication-sim.ts";

const IDS = ["p0", "p1", "p2"];
const LIMITS = { maxPendingDeltas: 3, maxTrackedSeqs: 3, maxResendSpan: 2 };

type Command =
  | { kind: "publish"; peer: number; amount: number; edge: number }
  | { kind: "deliver"; pick: number }
  | { kind: "drop"; pick: number }
  | { kind: "duplicate"; pick: number }
  | { kind: "advance"; ms: number }
  | { kind: "crash"; peer: number }
  | { kind: "restart"; peer: number };

const command: fc.Arbitrary<Command> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant("publish" as const), peer: fc.integer({ min: 0, max: 2 }), amount: fc.integer({ min: 1, max: 9 }), edge: fc.integer({ min: 0, max: 4 }) }) },
  { weight: 8, arbitrary: fc.record({ kind: fc.constant("deliver" as const), pick: fc.nat() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("drop" as const), pick: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("duplicate" as const), pick: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant("advance" as const), ms: fc.integer({ min: 1, max: 400 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("crash" as const), peer: fc.integer({ min: 0, max: 2 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("restart" as const), peer: fc.integer({ min: 0, max: 2 }) }) },
);

interface Peer {
  id: string;
  replica: LedgerReplica;
  core: ReplicationCore;
  incarnation: number;
  alive: boolean;
}

interface Flight {
  from: string;
  to: string;
  message: LedgerMessage;
}

/** One run: commands, then a lossless heal; returns the checks' findings. */
function run(commands: Command[], antiEntropy: boolean): void {
  const genesis = simGenesis(IDS);
  const config: ReplicationConfig = {
    ...REPLICATION_DEFAULTS,
    ...LIMITS,
    antiEntropyIntervalMs: 100,
    resendRetryMs: 200,
    fullStateRetryMs: 300,
    fullStateRetryLimit: antiEntropy ? 10 : 1_000_000,
    antiEntropy,
  };
  let now = 0;
  let model: EntitlementLedger = genesis;
  let fresh = 0;
  const flights: Flight[] = [];
  const peers = new Map<string, Peer>();
  const start = (id: string, incarnation: number, state: EntitlementLedger) => {
    const replica = new LedgerReplica(state);
    const core = new ReplicationCore({
      self: id, incarnation, replica, genesis, config, random: mulberry(incarnation * 31 + IDS.indexOf(id)), now, restarted: incarnation > 1, valueBudget: 1 << 20,
    });
    peers.set(id, { id, replica, core, incarnation, alive: true });
  };
  const alive = () => [...peers.values()].filter((p) => p.alive);
  const members = (p: Peer) => new Set(alive().filter((q) => q !== p).map((q) => q.id));
  /** Collects a core's output and checks the §5.5 bounds after every step. */
  const drain = (p: Peer, servedResend: boolean) => {
    const rd = p.core.ready();
    let deltas = 0;
    for (const s of rd.sends) {
      flights.push({ from: p.id, to: s.to, message: s.message });
      if (s.message.kind === "delta") deltas++;
    }
    if (servedResend) {
      expect(deltas).toBeLessThanOrEqual(LIMITS.maxResendSpan);
      atLimit.resends++;
    }
    const m = p.core.metrics();
    expect(m.pendingDeltas).toBeLessThanOrEqual(LIMITS.maxPendingDeltas);
    if (m.pendingDeltas === LIMITS.maxPendingDeltas) atLimit.buffer++;
    for (const q of IDS) {
      const c = p.core.cursor(q);
      if (c !== undefined) expect(c.above.length).toBeLessThanOrEqual(LIMITS.maxTrackedSeqs);
      if (c !== undefined) expect(c.partsHeld).toBeLessThanOrEqual(LIMITS.maxTrackedSeqs);
      if (c !== undefined && c.above.length > 0) atLimit.tracked++;
    }
    for (const k of p.core.knownPeers()) expect(IDS.includes(k) && k !== p.id).toBe(true);
  };
  const membershipAll = () => {
    for (const p of alive()) {
      p.core.membership(members(p), now);
      drain(p, false);
    }
  };
  const tickAll = () => {
    for (let guard = 0; guard < 100; guard++) {
      const due = alive().filter((p) => p.core.nextWake() <= now);
      if (due.length === 0) return;
      for (const p of due) {
        p.core.tick(now);
        drain(p, false);
      }
    }
    throw new Error("a core keeps asking to be ticked at the same time");
  };
  const deliver = (i: number) => {
    const f = flights.splice(i, 1)[0]!;
    const to = peers.get(f.to)!;
    if (!to.alive) return; // lost with the crashed process
    const before = to.core.metrics().resendsServed;
    to.core.step(f.from, f.message, now);
    drain(to, f.message.kind === "resend" && to.core.metrics().resendsServed > before);
  };

  for (const id of IDS) start(id, 1, genesis);
  membershipAll();
  for (const c of commands) {
    switch (c.kind) {
      case "publish": {
        const p = peers.get(IDS[c.peer]!)!;
        if (!p.alive) break;
        // A delegate down one of the tree's edges, or a brand-new edge (a record no later patch repeats, so a
        // lost delta is only ever made good by replication itself). Applied: the commit succeeded.
        const r =
          c.edge < 2
            ? p.replica.delegate(ReplicaId(p.id), AttachmentId(c.edge === 0 ? "e1" : "e2"), BigInt(c.amount))
            : p.replica.prepare({ id: AttachmentId(`${p.id}-new-${++fresh}`), parent: GroupId("g2"), child: GroupId(`${p.id}-leaf-${fresh}`), weight: Weight.of(BigInt(c.amount)) });
        if (!r.ok) break;
        p.core.publish(r.patch, now);
        drain(p, false);
        model = model.join(r.patch);
        now += 1; // the batch closes: one delta per publish
        tickAll();
        break;
      }
      case "deliver":
        if (flights.length > 0) deliver(c.pick % flights.length);
        break;
      case "drop":
        if (flights.length > 0) flights.splice(c.pick % flights.length, 1);
        break;
      case "duplicate":
        if (flights.length > 0) flights.push(flights[c.pick % flights.length]!);
        break;
      case "advance":
        now += c.ms;
        tickAll();
        break;
      case "crash": {
        const p = peers.get(IDS[c.peer]!)!;
        if (!p.alive || alive().length <= 1) break;
        p.alive = false; // its store holds its replica: every publish was committed before it left
        membershipAll();
        break;
      }
      case "restart": {
        const p = peers.get(IDS[c.peer]!)!;
        if (p.alive) break;
        start(p.id, p.incarnation + 1, p.replica.snapshot());
        membershipAll();
        break;
      }
    }
  }
  // Heal: everyone back, no more loss; deliver everything in order while time passes.
  for (const p of [...peers.values()]) if (!p.alive) start(p.id, p.incarnation + 1, p.replica.snapshot());
  membershipAll();
  const converged = () => alive().every((p) => p.replica.digest() === model.digest());
  for (let round = 0; round < 3_000 && !converged(); round++) {
    while (flights.length > 0) deliver(0);
    now += 10;
    tickAll();
  }
  for (const p of alive()) expect(p.replica.snapshot().encode()).toBe(model.encode());
}

/** A small seeded generator for the cores' anti-entropy choices. */
function mulberry(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** How often the runs came near each limit: a property that never reaches a bound checks nothing. */
const atLimit = { buffer: 0, tracked: 0, resends: 0 };

const RUNS = Number(process.env.HEDDLE_RUNS ?? 500);
const params = { numRuns: RUNS, ...(process.env.HEDDLE_SEED === undefined ? {} : { seed: Number(process.env.HEDDLE_SEED) }) };

describe("replication core against a reference model (fast-check, no network, no timers)", () => {
  it("any delivery order, drops, duplicates, crashes and restarts: the §5.5 bounds hold, and after a lossless heal every replica is genesis ⊔ every published patch", () => {
    fc.assert(fc.property(fc.array(command, { maxLength: 100 }), (cs) => run(cs, true)), params);
    console.log(`core model: steps at the buffer limit ${atLimit.buffer}, with out-of-order seqs tracked ${atLimit.tracked}, resends served ${atLimit.resends}`);
    if (RUNS >= 100) expect(atLimit.buffer > 0 && atLimit.tracked > 0 && atLimit.resends > 0).toBe(true);
  });

  it("the same with anti-entropy off: replication's own bookkeeping converges", () => {
    fc.assert(fc.property(fc.array(command, { maxLength: 100 }), (cs) => run(cs, false)), params);
  });
});
