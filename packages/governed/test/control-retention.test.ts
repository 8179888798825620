/**
 * Retention of `idem:` sessions (the daemon's one session per `Idempotency-Key`; control-state.ts, governed README
 * "Idempotency-key retention"): an outcome is remembered while its index is among the last `idempotencyWindow`
 * applied, a retry within that window replays it, a later one is a new act — and a new `mint` under an already
 * minted MintId never counts twice. The retained set is a function of `appliedIndex`, so a peer that replays and
 * one that restores a snapshot at any point hold equal states; old snapshots taken without pruning restore and
 * converge at the next step. Checked by examples and by fast-check against the reference model's full-scan rule.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { AttachmentId, GroupId, ReplicaId, Weight } from "@heddle/ledger";
import { ControlModel } from "./support/control-model.ts";
import { canonicalJson } from "../src/control/canonical-json.ts";
import { ControlState, DEFAULT_IDEMPOTENCY_WINDOW, encodeEnvelope, outcomeJson } from "../src/index.ts";
import type { AppliedStep, Committed, ControlCommand, ControlOutcome, LogEntry, ProposalKey } from "../src/index.ts";

const RUNS = Number(process.env.HEDDLE_RUNS ?? 300);
const root = GroupId("root");
const claims = { capacity: { pool: 2 } };
const R = ReplicaId;
const E = AttachmentId;
const rec = (id: string, parent: string, child: string) => ({ id: E(id), parent: GroupId(parent), child: GroupId(child), weight: Weight.of(1n) });
const idem = (name: string): ProposalKey => ({ client: `idem:${name}`, seq: 1 });
const state = (window?: number) => new ControlState({ root, claims, ...(window === undefined ? {} : { idempotencyWindow: window }) });

/** Builds committed items one index after another, and applies them to any number of states. */
class Log {
  readonly items: Committed[] = [];
  entry(cmd: ControlCommand, key: ProposalKey, o: { ackFloor?: number; proposer?: string; stampedAt?: number } = {}): Committed {
    const command = encodeEnvelope({ v: 1, key, ackFloor: o.ackFloor ?? 0, proposer: R(o.proposer ?? "n1"), cmd });
    const entry: LogEntry = { index: this.items.length + 1, term: 1, kind: "app", key, command, stampedAt: o.stampedAt ?? 1_000 };
    const item: Committed = { kind: "entry", entry };
    this.items.push(item);
    return item;
  }
  internal(): Committed {
    const item: Committed = { kind: "internal", index: this.items.length + 1 };
    this.items.push(item);
    return item;
  }
}

/** Drives one state through a `Log`. */
class Driver {
  readonly log = new Log();
  readonly st: ControlState;
  constructor(st: ControlState) {
    this.st = st;
  }
  entry(cmd: ControlCommand, key: ProposalKey, o?: Parameters<Log["entry"]>[2]): AppliedStep {
    return this.st.apply(this.log.entry(cmd, key, o));
  }
  out(cmd: ControlCommand, key: ProposalKey, o?: Parameters<Log["entry"]>[2]): ControlOutcome {
    return this.entry(cmd, key, o).outcome!;
  }
  internal(n = 1): void {
    for (let i = 0; i < n; i++) this.st.apply(this.log.internal());
  }
}

/** The `idem:` clients a state holds, with the seqs of their outcomes, read from its canonical text. */
function idemSessions(st: ControlState): Map<string, number[]> {
  const doc = JSON.parse(st.stateText()) as { sessions: [string, number, [number, string, unknown][]][] };
  return new Map(doc.sessions.filter(([c]) => c.startsWith("idem:")).map(([c, , outs]) => [c, outs.map(([seq]) => seq)]));
}

const mint = (amount: bigint, holder = "n1"): ControlCommand => ({ op: "mint", holder: R(holder), amount });

describe("idem: retention (examples)", () => {
  it("a retry within the window replays the outcome; past it the key is forgotten and the retry is a new act, which mints nothing twice", () => {
    const d = new Driver(state(3));
    const k = idem("a");
    const first = d.out(mint(100n), k);
    expect(first).toMatchObject({ kind: "applied", index: 1, noop: false, mintId: "mint:idem:a:1" });
    d.internal(2);
    // index 4: the outcome at 1 is 3 entries back, still inside a window of 3
    const replay = d.entry(mint(100n), k);
    expect(replay.decided).toBe(false);
    expect(replay.outcome).toEqual(first);
    // applying index 4 forgot it: 1 ≤ 4 − 3
    expect(d.st.outcomeOf(k)).toBe("unknown");
    expect(d.st.keyRetention()).toEqual({ entries: 3, forgottenThrough: 1, sessions: 0 });
    const late = d.entry(mint(100n), k);
    expect(late.decided).toBe(true);
    expect(late.outcome).toEqual({ kind: "applied", index: 5, key: k, noop: true, mintId: "mint:idem:a:1" });
    expect(late.publish).toEqual([]);
    expect(d.st.mintedTotal()).toBe(100n);
    expect([...d.st.minted().keys()]).toEqual(["mint:idem:a:1"]);
    expect(d.st.outcomeOf(k)).toEqual(late.outcome);
    // the state still restores: the projection's mints agree with the mint list
    expect(ControlState.decode(d.st.encode(), { root, claims, idempotencyWindow: 3 }).stateText()).toBe(d.st.stateText());
  });

  it("a forgotten key reused for another mint is keyReuse, as the session would have answered, and mints nothing", () => {
    const d = new Driver(state(2));
    const k = idem("b");
    d.out(mint(5n), k);
    d.internal(2);
    expect(d.st.outcomeOf(k)).toBe("unknown");
    expect(d.out(mint(6n), k)).toEqual({ kind: "conflict", index: 4, key: k, conflict: { reason: "keyReuse", key: k } });
    d.internal(2);
    expect(d.out(mint(5n, "n2"), k)).toMatchObject({ kind: "conflict", conflict: { reason: "keyReuse" } });
    expect(d.st.mintedTotal()).toBe(5n);
  });

  it("keeps exactly the idem: outcomes of the last N indexes, counts its sessions, and never touches other clients", () => {
    const N = 4;
    const d = new Driver(state(N));
    for (let i = 1; i <= 12; i++) {
      if (i % 3 === 0) d.internal();
      else d.out({ op: "enroll", replica: R(`r${i}`) }, idem(`k${i}`));
      const want = [...Array(12).keys()].map((x) => x + 1).filter((j) => j % 3 !== 0 && j <= i && j > i - N);
      expect([...idemSessions(d.st).keys()].sort()).toEqual(want.map((j) => `idem:k${j}`).sort());
      expect(d.st.keyRetention()).toEqual({ entries: N, forgottenThrough: Math.max(0, i - N), sessions: want.length });
    }
    // explicit and auto clients keep everything (§3.10)
    d.out(mint(1n), { client: "op", seq: 1 });
    d.out(mint(1n), { client: "auto:n1:x", seq: 1 });
    d.internal(3 * N);
    expect(d.st.outcomeOf({ client: "op", seq: 1 })).toMatchObject({ kind: "applied" });
    expect(d.st.outcomeOf({ client: "auto:n1:x", seq: 1 })).toMatchObject({ kind: "applied" });
    expect(d.st.keyRetention().sessions).toBe(0);
  });

  it("an idem: session without an outcome is not kept: a stale entry under a fresh idem: client leaves nothing behind", () => {
    const d = new Driver(state(50));
    const k = { client: "idem:floor", seq: 1 };
    expect(d.out(mint(1n), k, { ackFloor: 2 })).toMatchObject({ kind: "conflict", conflict: { reason: "stale" } });
    expect(idemSessions(d.st).size).toBe(0);
    expect(d.st.keyRetention().sessions).toBe(0);
    // and an idem: session whose floor dropped its only outcome goes with the stale entry that raised it
    d.out(mint(1n), { client: "idem:two", seq: 1 });
    d.out(mint(1n), { client: "idem:two", seq: 1 }, { ackFloor: 2 });
    expect(idemSessions(d.st).size).toBe(0);
    expect(d.st.mintedTotal()).toBe(1n);
  });

  it("the default window is 10 000 indexes and a window below 1 is refused", () => {
    expect(state().keyRetention()).toEqual({ entries: DEFAULT_IDEMPOTENCY_WINDOW, forgottenThrough: 0, sessions: 0 });
    expect(DEFAULT_IDEMPOTENCY_WINDOW).toBe(10_000);
    expect(() => state(0)).toThrow(RangeError);
    expect(() => state(1.5)).toThrow(RangeError);
  });

  it("late duplicates of the other verbs, decided again past the window (what the README documents)", () => {
    const d = new Driver(state(1));
    const late = (cmd: ControlCommand, name: string): ControlOutcome => {
      d.internal(2); // forget the first outcome
      return d.out(cmd, idem(name));
    };
    const once = (cmd: ControlCommand, name: string): ControlOutcome => d.out(cmd, idem(name));
    // prepare: the same record is a noop
    once({ op: "prepare", record: rec("e1", "root", "a") }, "p");
    expect(late({ op: "prepare", record: rec("e1", "root", "a") }, "p")).toMatchObject({ kind: "applied", noop: true });
    // activate after the edge moved on: a conflict, nothing changes
    once({ op: "activate", edge: E("e1") }, "act");
    d.out({ op: "close", edge: E("e1") }, { client: "op", seq: 1 });
    expect(late({ op: "activate", edge: E("e1") }, "act")).toMatchObject({ kind: "conflict", conflict: { reason: "lifecycleRegression" } });
    expect(d.st.lifecycle(E("e1"))).toBe("CLOSING");
    // close and retire: noops
    once({ op: "retire", edge: E("e1") }, "ret");
    expect(late({ op: "retire", edge: E("e1") }, "ret")).toMatchObject({ kind: "applied", noop: true });
    // enroll after a depart: enrolls again (a hazard, documented)
    once({ op: "enroll", replica: R("n2") }, "en");
    d.out({ op: "depart", replica: R("n2") }, { client: "op", seq: 2 }, { proposer: "n2" });
    expect(late({ op: "enroll", replica: R("n2") }, "en")).toMatchObject({ kind: "applied", noop: false });
    expect(d.st.roster.enrolled.has(R("n2"))).toBe(true);
    // claims.release after the holder took the key again: releases the new claim (a hazard, documented)
    const take = { op: "claims.take" as const, request: { holder: "h", resources: [{ key: "m", mode: "exclusive" as const }], ttlMs: 60_000 } };
    d.out(take, { client: "op", seq: 3 });
    once({ op: "claims.release", holder: "h", key: "m" }, "rel");
    d.out(take, { client: "op", seq: 4 });
    expect(d.st.claims.owner("m")).toBeDefined();
    late({ op: "claims.release", holder: "h", key: "m" }, "rel");
    expect(d.st.claims.owner("m")).toBeUndefined();
    // the same late release naming its grant's token ends nothing: the newer grant stays
    const first = d.out(take, { client: "op", seq: 5 });
    const firstToken = first.kind === "applied" && typeof first.claims === "object" && first.claims !== null && "grants" in first.claims ? first.claims.grants[0]!.token : -1;
    once({ op: "claims.release", holder: "h", key: "m", token: firstToken }, "rel-fenced");
    const second = d.out(take, { client: "op", seq: 6 });
    const secondToken = second.kind === "applied" && typeof second.claims === "object" && second.claims !== null && "grants" in second.claims ? second.claims.grants[0]!.token : -1;
    expect(secondToken).toBeGreaterThan(firstToken);
    expect(late({ op: "claims.release", holder: "h", key: "m", token: firstToken }, "rel-fenced")).toMatchObject({ kind: "applied", claims: false, heldToken: secondToken });
    expect(d.st.claims.owner("m")).toBe("h");
    expect(d.st.claims.checkFence("m", secondToken)).toBe(true);
  });
});

describe("idem: retention and snapshots", () => {
  it("a snapshot taken without pruning (more idem: sessions than the window) restores as it is and converges to the pruned set at the next step", () => {
    const N = 5;
    const log = new Log();
    for (let i = 1; i <= 30; i++) {
      if (i % 4 === 0) log.internal();
      else log.entry(mint(BigInt(i)), idem(`old${i}`));
    }
    // the old code: no pruning (a window longer than the log stands for it)
    const old = state(1_000_000);
    for (const it0 of log.items) old.apply(it0);
    expect(idemSessions(old).size).toBeGreaterThan(N);
    const oldBytes = old.encode();
    // a peer with the window restores the old bytes exactly (the format did not change)
    const restored = ControlState.decode(oldBytes, { root, claims, idempotencyWindow: N });
    expect(restored.stateText()).toBe(old.stateText());
    expect(restored.keyRetention().sessions).toBe(idemSessions(old).size);
    // a peer with the window that replayed the same log from index 1
    const replayed = state(N);
    for (const it0 of log.items) replayed.apply(it0);
    expect(idemSessions(replayed).size).toBeLessThanOrEqual(N);
    // one more step: the restored peer prunes down to exactly the replayed peer's state
    const next = log.internal();
    restored.apply(next);
    replayed.apply(next);
    expect(restored.stateText()).toBe(replayed.stateText());
    expect(restored.keyRetention()).toEqual(replayed.keyRetention());
    // an install of the old bytes prunes at the install step itself
    const installer = state(N);
    installer.apply({ kind: "install", snapshot: { throughIndex: 30, state: oldBytes } });
    const atThirty = state(N);
    for (const it0 of log.items.slice(0, 30)) atThirty.apply(it0);
    expect(installer.stateText()).toBe(atThirty.stateText());
  });

  it("an old snapshot's idem: session without outcomes (which older code kept after a stale entry) is dropped at the next step", () => {
    const d = new Driver(state(10));
    d.out(mint(1n), idem("m"));
    const text = d.st.stateText();
    // older code kept the session a stale entry created: floor 2, no outcomes (sorted before idem:m)
    const old = text.replace('"sessions":[', '"sessions":[["idem:a",2,[]],');
    const restored = ControlState.decode(new TextEncoder().encode(old), { root, claims, idempotencyWindow: 10 });
    expect(restored.stateText()).toBe(old);
    expect(restored.keyRetention().sessions).toBe(2);
    const next = d.log.internal();
    restored.apply(next);
    d.st.apply(next);
    expect(restored.stateText()).toBe(d.st.stateText());
    expect(restored.keyRetention().sessions).toBe(1);
  });

  it("a snapshot holding an idem: outcome at an index above its applied index is refused", () => {
    const d = new Driver(state(10));
    d.out(mint(1n), idem("x"));
    d.internal();
    const text = d.st.stateText();
    const forged = text.replace('"appliedIndex":2', '"appliedIndex":0').replace('"roster":[]', '"roster":[]');
    expect(() => ControlState.decode(new TextEncoder().encode(forged), { root, claims, idempotencyWindow: 10 })).toThrow(/recorded at index 1, applied through 0/);
  });
});

// ------------------------------------------------------------------------------------------------ property

type Step = { internal: true } | { cmd: ControlCommand; client: string; seq: number; ackFloor: number; proposer: string };

const arbCmd: fc.Arbitrary<ControlCommand> = fc.oneof(
  fc.record({ op: fc.constant("mint" as const), holder: fc.constantFrom("n1", "n2").map(R), amount: fc.constantFrom(1n, 2n, 5n) }),
  fc.record({ op: fc.constantFrom("enroll" as const, "depart" as const), replica: fc.constantFrom("n1", "n2").map(R) }),
  fc.constantFrom("e0", "e1").map((id) => ({ op: "prepare" as const, record: rec(id, "root", "g") })),
  fc.record({ op: fc.constantFrom("activate" as const, "close" as const, "retire" as const), edge: fc.constantFrom("e0", "e1").map(E) }),
  fc.record({ op: fc.constant("claims.take" as const), request: fc.constant({ holder: "h", resources: [{ key: "m", mode: "exclusive" as const }], ttlMs: 100 }) }),
);

// mostly idem: clients (seq 1, ackFloor 0, as the daemon sends them; a few with a floor), a few explicit ones
const arbStep: fc.Arbitrary<Step> = fc.oneof(
  { weight: 2, arbitrary: fc.constant({ internal: true as const }) },
  {
    weight: 8,
    arbitrary: fc.record({ cmd: arbCmd, client: fc.constantFrom("idem:a", "idem:b", "idem:c", "idem:d", "idem:e", "idem:f"), seq: fc.constantFrom(1, 1, 1, 2), ackFloor: fc.constantFrom(0, 0, 0, 0, 2), proposer: fc.constantFrom("n1", "n2") }),
  },
  { weight: 2, arbitrary: fc.record({ cmd: arbCmd, client: fc.constant("op"), seq: fc.integer({ min: 1, max: 6 }), ackFloor: fc.integer({ min: 0, max: 3 }), proposer: fc.constantFrom("n1", "n2") }) },
);

function itemsOf(steps: readonly Step[]): Committed[] {
  return steps.map((s, i): Committed => {
    const index = i + 1;
    if ("internal" in s) return { kind: "internal", index };
    const key = { client: s.client, seq: s.seq };
    const command = encodeEnvelope({ v: 1, key, ackFloor: Math.min(s.ackFloor, s.seq), proposer: R(s.proposer), cmd: s.cmd });
    return { kind: "entry", entry: { index, term: 1, kind: "app", key, command, stampedAt: index * 10 } };
  });
}

describe("idem: retention against the model (fast-check)", () => {
  it("replay and snapshot-restore at random points give equal encode(); outcomes and the retained idem: set are the model's", () => {
    fc.assert(
      fc.property(fc.array(arbStep, { minLength: 1, maxLength: 70 }), fc.integer({ min: 1, max: 8 }), fc.array(fc.nat(), { maxLength: 4 }), (steps, window, cuts) => {
        const items = itemsOf(steps);
        const replayer = state(window);
        let restorer = state(window);
        const model = new ControlModel("root", claims, window);
        const at = new Set(cuts.map((c) => c % items.length));
        items.forEach((item, i) => {
          const got = replayer.apply(item);
          restorer.apply(item);
          if (item.kind === "entry") {
            const want = model.applyEntry(item.entry);
            expect(canonicalJson(outcomeJson(got.outcome!)), `entry ${i + 1}`).toBe(canonicalJson(outcomeJson(want!)));
          } else if (item.kind === "internal") model.applyInternal(item.index);
          expect(idemSessions(replayer), `idem: sessions after ${i + 1}`).toEqual(model.idemSessions());
          expect(replayer.keyRetention().sessions).toBe(model.idemSessions().size);
          if (at.has(i)) {
            // restore from this peer's own bytes, or install them into a fresh peer: either way, equal from here on
            const bytes = restorer.encode();
            if (i % 2 === 0) restorer = ControlState.decode(bytes, { root, claims, idempotencyWindow: window });
            else {
              restorer = state(window);
              restorer.apply({ kind: "install", snapshot: { throughIndex: i + 1, state: bytes } });
            }
          }
          expect(restorer.stateText(), `state after ${i + 1}`).toBe(replayer.stateText());
        });
        expect(replayer.mintedTotal()).toBe(model.total);
        // every mint id is minted once: the total is the sum of the distinct mint records
        expect([...replayer.minted().values()].reduce((s, m) => s + m.amount, 0n)).toBe(replayer.mintedTotal());
      }),
      { numRuns: RUNS },
    );
  });
});
