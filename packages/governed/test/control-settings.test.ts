/**
 * governed.md §3.5: `decide` reads the construction constants `root`, the claims options and the window, "identical on
 * every peer". Each peer takes them from its own config, so the log fixes them (`ControlSettings`): the first entry
 * carrying settings (envelope v2) fixes them, snapshots carry them, and a member whose own differ halts — naming the
 * setting — before it decides anything under them. Equal settings spelled differently pass.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { GroupId, ReplicaId } from "@heddle/ledger";
import type { ClaimsOptions } from "@heddle/claims";
import { ControlPlaneHaltedError, ControlState, CONTROL_STATE_FORMAT, CONTROL_STATE_FORMAT_SETTINGS, decodeEntry, encodeEnvelope, SettingsMismatchError } from "../src/index.ts";
import type { Committed, ControlCommand, ControlOutcome, ControlStateOptions, ProposalKey } from "../src/index.ts";
import { GovernedCluster } from "./support/governed-cluster.ts";

const root = GroupId("root");
const take = (holder: string, key: string, mode: "shared" | "exclusive" = "shared"): ControlCommand => ({ op: "claims.take", request: { holder, resources: [{ key, mode }] } });

/** A log under construction: `add` appends one entry, carrying `settingsOf`'s settings (envelope v2) when given. */
class Log {
  readonly items: Committed[] = [];
  add(key: ProposalKey | null, cmd: ControlCommand, settingsOf?: ControlState, proposer = "n1"): this {
    const index = this.items.length + 1;
    const env = settingsOf === undefined ? { v: 1 as const, key, ackFloor: 0, proposer: ReplicaId(proposer), cmd } : { v: 2 as const, key, ackFloor: 0, proposer: ReplicaId(proposer), cmd, settings: settingsOf.settings };
    this.items.push({ kind: "entry", entry: { index, term: 1, kind: "app", key, command: encodeEnvelope(env), stampedAt: 1000 + index } });
    return this;
  }
}

/** Applies every item; returns the outcomes answered and the halt, if any (never throws past it). */
function applyAll(st: ControlState, items: readonly Committed[]): { outcomes: (ControlOutcome | null)[]; halt: ControlPlaneHaltedError | null } {
  const outcomes: (ControlOutcome | null)[] = [];
  for (const item of items) {
    try {
      outcomes.push(st.apply(item).outcome);
    } catch (e) {
      if (!(e instanceof ControlPlaneHaltedError)) throw e;
      return { outcomes, halt: e };
    }
  }
  return { outcomes, halt: null };
}

const granted = (o: ControlOutcome | null | undefined): boolean => (o as { claims?: { ok?: boolean } } | null | undefined)?.claims?.ok === true;

function mismatch(halt: ControlPlaneHaltedError | null): SettingsMismatchError {
  expect(halt).toBeInstanceOf(ControlPlaneHaltedError);
  expect(halt!.cause).toBeInstanceOf(SettingsMismatchError);
  return halt!.cause as SettingsMismatchError;
}

describe("decision-affecting settings are fixed in the log and checked by every member (governed.md §3.5)", () => {
  it("two members whose claims capacity differs: the one whose config lost the line halts at the fixing entry, naming claims.capacity, and answers nothing", () => {
    const a = new ControlState({ root, claims: { capacity: { pool: 2 } } });
    const b = new ControlState({ root }); // its config lost the capacity line
    // a's first act fixes the log's settings; the second take is a plain v1 entry
    const log = new Log().add({ client: "a", seq: 1 }, take("w1", "pool"), a).add({ client: "b", seq: 1 }, take("w2", "pool"));
    const ra = applyAll(a, log.items);
    expect(ra.halt).toBeNull();
    expect(ra.outcomes.map(granted)).toEqual([true, true]);
    const rb = applyAll(b, log.items);
    const err = mismatch(rb.halt);
    expect(rb.halt!.index).toBe(1);
    expect(err.differences.map((d) => d.setting)).toEqual(["claims.capacity"]);
    expect(err.fixedAt).toBe(1);
    expect(err.fixedBy).toBe("n1");
    expect(rb.halt!.message).toContain("claims.capacity");
    expect(rb.halt!.message).toMatch(/the log's is 1 key \(sha256 [0-9a-f]{32}\), this member's is empty/);
    // b decided nothing: no outcome, nothing in its claims table, applied index before the fixing entry
    expect(rb.outcomes).toEqual([]);
    expect(b.appliedIndex).toBe(0);
    expect(b.claims.open()).toEqual([]);
    expect(b.outcomeOf({ client: "a", seq: 1 })).toBe("unknown");
    expect(() => b.apply(log.items[1]!)).toThrow(rb.halt!);
  });

  it("idempotencyWindow and root differ: each named; a member with equal settings applies on", () => {
    const a = new ControlState({ root, idempotencyWindow: 2 });
    const log = new Log().add({ client: "idem:k", seq: 1 }, take("w1", "x", "exclusive"), a);
    expect(mismatch(applyAll(new ControlState({ root }), log.items).halt).differences.map((d) => d.setting)).toEqual(["idempotencyWindow"]);
    const other = mismatch(applyAll(new ControlState({ root: GroupId("elsewhere"), idempotencyWindow: 2, claims: { maxPerHolder: 3 } }), log.items).halt);
    expect(other.differences.map((d) => d.setting)).toEqual(["claims.maxPerHolder", "root"]);
    expect(other.message).toContain('root — the log\'s is "root", this member\'s is "elsewhere"');
    expect(applyAll(new ControlState({ root, idempotencyWindow: 2 }), log.items).halt).toBeNull();
  });

  it("the roster counts, in order (a not-on-roster refusal lists it)", () => {
    const a = new ControlState({ root, claims: { roster: ["x", "y"] } });
    const log = new Log().add({ client: "a", seq: 1 }, take("w1", "z"), a);
    expect(mismatch(applyAll(new ControlState({ root, claims: { roster: ["y", "x"] } }), log.items).halt).differences.map((d) => d.setting)).toEqual(["claims.roster"]);
    expect(mismatch(applyAll(new ControlState({ root }), log.items).halt).message).toContain("claims.roster — the log's is 2 keys");
  });

  it("settings carried by a later entry that differ from the fixed ones decide nothing differently: the fixed ones rule", () => {
    const a = new ControlState({ root, claims: { capacity: { pool: 2 } } });
    const stray = new ControlState({ root }); // a misconfigured proposer that had not applied the fixing entry yet
    const log = new Log().add({ client: "a", seq: 1 }, take("w1", "pool"), a).add({ client: "s", seq: 1 }, take("w2", "pool"), stray, "n2");
    const r = applyAll(a, log.items);
    expect(r.halt).toBeNull();
    expect(r.outcomes.map(granted)).toEqual([true, true]); // decided with the log's capacity 2
    expect(a.fixedSettings).toMatchObject({ fixedAt: 1, fixedBy: "n1" });
    // and the stray proposer itself halts at the fixing entry, before its own
    expect(mismatch(applyAll(stray, log.items).halt).fixedAt).toBe(1);
  });

  it("a snapshot made under other settings is refused on install and on decode, naming the setting", () => {
    const a = new ControlState({ root, claims: { capacity: { pool: 2 } } });
    const log = new Log().add({ client: "a", seq: 1 }, take("w1", "pool"), a).add({ client: "a", seq: 2 }, take("w2", "pool"));
    applyAll(a, log.items);
    const bytes = a.encode();
    expect(JSON.parse(new TextDecoder().decode(bytes)).format).toBe(CONTROL_STATE_FORMAT_SETTINGS);
    const b = new ControlState({ root });
    const r = applyAll(b, [{ kind: "install", snapshot: { throughIndex: 2, term: 1, state: bytes } } as Committed]);
    expect(mismatch(r.halt).differences.map((d) => d.setting)).toEqual(["claims.capacity"]);
    expect(r.halt!.message).toContain("the snapshot this member was handed");
    expect(b.appliedIndex).toBe(0);
    expect(b.claims.open()).toEqual([]);
    expect(() => ControlState.decode(bytes, { root, idempotencyWindow: 5, claims: { capacity: { pool: 2 } } })).toThrow(SettingsMismatchError);
    // the same settings restore it, fixed settings included, and apply on
    const c = ControlState.decode(bytes, { root, claims: { capacity: { pool: 2 } } });
    expect(c.fixedSettings).toEqual(a.fixedSettings);
    expect(c.encode()).toEqual(bytes);
  });

  it("equal settings spelled differently pass, and the members' states and snapshots are byte-identical", () => {
    const spellings: ControlStateOptions[] = [
      { root, claims: { capacity: { pool: 2, mutex: 1 }, roster: ["pool", "mutex"] }, idempotencyWindow: 10_000 },
      { root, claims: { roster: [" pool", "mutex "], capacity: { " pool ": 2 } } },
      { root, claims: { capacity: { mutex: 1, pool: 2 }, roster: ["pool", "mutex"] }, idempotencyWindow: 10_000 },
    ];
    const states = spellings.map((o) => new ControlState(o));
    expect(new Set(states.map((s) => s.settingsDigest)).size).toBe(1);
    const log = new Log().add({ client: "a", seq: 1 }, take("w1", "pool"), states[1]).add({ client: "a", seq: 2 }, take("w2", "mutex", "exclusive")).add({ client: "a", seq: 3 }, take("w3", "mutex"));
    const results = states.map((s) => applyAll(s, log.items));
    for (const r of results) expect(r.halt).toBeNull();
    expect(results[0]!.outcomes.map(granted)).toEqual([true, true, false]);
    expect(new Set(states.map((s) => new TextDecoder().decode(s.encode()))).size).toBe(1);
    // a snapshot of one installs on another
    const fresh = new ControlState(spellings[2]!);
    expect(applyAll(fresh, [{ kind: "install", snapshot: { throughIndex: 3, term: 1, state: states[0]!.encode() } } as Committed]).halt).toBeNull();
    // no claims options at all, {} and an empty capacity map are one setting
    const none = [new ControlState({ root }), new ControlState({ root, claims: {} }), new ControlState({ root, claims: { capacity: {} }, idempotencyWindow: 10_000 })];
    expect(new Set(none.map((s) => s.settingsDigest)).size).toBe(1);
  });

  it("a log written before settings existed applies as before: nothing fixed, snapshots in the old format", () => {
    const st = new ControlState({ root, claims: { capacity: { pool: 2 } } });
    const log = new Log().add({ client: "a", seq: 1 }, take("w1", "pool")).add({ client: "a", seq: 2 }, take("w2", "pool"));
    expect(applyAll(st, log.items).halt).toBeNull();
    expect(st.fixedSettings).toBeNull();
    const text = new TextDecoder().decode(st.encode());
    expect(JSON.parse(text).format).toBe(CONTROL_STATE_FORMAT);
    expect(text).not.toContain('"settings"');
    // an older build listed a capacity of 1 in its snapshot: it restores, re-spelled as this build writes it
    const doc = JSON.parse(text) as { claims: string };
    const table = JSON.parse(doc.claims) as { capacity: unknown };
    expect(table.capacity).toEqual([["pool", 2]]);
    table.capacity = [["other", 1], ["pool", 2]];
    doc.claims = JSON.stringify(table);
    const older = JSON.stringify(doc);
    const restored = ControlState.decode(new TextEncoder().encode(older), { root, claims: { capacity: { pool: 2 } } });
    expect(new TextDecoder().decode(restored.encode())).toBe(text);
    // a snapshot without settings through an index after the log fixed them is not this log's
    const fixedSt = new ControlState({ root });
    applyAll(fixedSt, new Log().add({ client: "a", seq: 1 }, take("w1", "k"), fixedSt).items);
    const unfixed = new ControlState({ root });
    applyAll(unfixed, new Log().add({ client: "a", seq: 1 }, take("w1", "k")).add({ client: "a", seq: 2 }, take("w2", "k")).items);
    expect(applyAll(fixedSt, [{ kind: "install", snapshot: { throughIndex: 2, term: 1, state: unfixed.encode() } } as Committed]).halt?.message).toContain("no settings, where the log fixed them at index 1");
  });

  it("envelope v2 carries settings, round-trips canonically, and v1/v2 never mix them up", () => {
    const st = new ControlState({ root, claims: { capacity: { pool: 3 } } });
    const env = { v: 2 as const, key: { client: "c", seq: 1 }, ackFloor: 0, proposer: ReplicaId("n1"), cmd: take("w", "pool"), settings: st.settings };
    const bytes = encodeEnvelope(env);
    expect(bytes[4]).toBe(2);
    const d = decodeEntry(bytes);
    expect(d.kind).toBe("control");
    expect(d.kind === "control" && d.envelope.settings).toEqual(st.settings);
    expect(() => encodeEnvelope({ ...env, v: 1 } as never)).toThrow(RangeError);
    const { settings: _, ...plain } = env;
    expect(() => encodeEnvelope(plain as never)).toThrow(RangeError);
    // a v1 body with settings, and a v2 body without, are malformed
    const body = new TextDecoder().decode(bytes.subarray(5));
    const v1With = Uint8Array.of(0x48, 0x44, 0x4c, 0x43, 1, ...new TextEncoder().encode(body.replace('"v":2', '"v":1')));
    expect(decodeEntry(v1With)).toMatchObject({ kind: "malformed" });
    const plainBytes = encodeEnvelope({ ...plain, v: 1 });
    const v2Without = Uint8Array.of(...plainBytes.subarray(0, 4), 2, ...new TextEncoder().encode(new TextDecoder().decode(plainBytes.subarray(5)).replace('"v":1', '"v":2')));
    expect(decodeEntry(v2Without)).toMatchObject({ kind: "malformed", why: expect.stringContaining("settings") });
    const badDigest = Uint8Array.of(...bytes.subarray(0, 5), ...new TextEncoder().encode(body.replace(/"sha256":"[0-9a-f]{32}"/, '"sha256":"XYZ"')));
    expect(decodeEntry(badDigest)).toMatchObject({ kind: "malformed", why: expect.stringContaining("claims.capacity") });
  });
});

describe("the canonical spelling never merges settings that decide differently (property)", () => {
  // keys from a small universe, with surrounding blanks sometimes; capacities 1 (an unlisted key's), 2, 3 or null
  const key = fc.constantFrom("a", "b", " a", "b ", "c");
  const claims: fc.Arbitrary<ClaimsOptions | undefined> = fc.option(
    fc.record(
      {
        capacity: fc.dictionary(key, fc.constantFrom<number | null>(1, 2, 3, null), { maxKeys: 3 }),
        maxPerHolder: fc.constantFrom(1, 2, 5),
      },
      { requiredKeys: [] },
    ),
    { nil: undefined },
  );
  const options = fc.record({ claims, idempotencyWindow: fc.option(fc.constantFrom(3, 10_000), { nil: undefined }) });
  const step = fc.record({ holder: fc.constantFrom("w1", "w2", "w3", "w4"), key: fc.constantFrom("a", "b", "c"), mode: fc.constantFrom<"shared" | "exclusive">("shared", "exclusive"), release: fc.boolean() });

  it("two members with equal canonical settings apply any log to byte-identical states; unequal ones halt the other at the first entry", () => {
    fc.assert(
      fc.property(options, options, fc.array(step, { minLength: 1, maxLength: 25 }), (oa, ob, steps) => {
        // duplicate keys after trimming are a config error the claims table refuses: not a case here
        let a: ControlState;
        let b: ControlState;
        try {
          a = new ControlState({ root, ...oa });
          b = new ControlState({ root, ...ob });
        } catch (e) {
          if (e instanceof RangeError) return;
          throw e;
        }
        const log = new Log();
        steps.forEach((s, i) => {
          const k = { client: "c", seq: i + 1 };
          if (s.release) log.add(k, { op: "claims.release", holder: s.holder, key: s.key }, i === 0 ? a : undefined);
          else log.add(k, take(s.holder, s.key, s.mode), i === 0 ? a : undefined);
        });
        // the same log with no settings in it (decided unchecked, as before): equal canonical settings must decide alike
        const plain = new Log();
        for (const item of log.items) {
          const d = item.kind === "entry" ? decodeEntry(item.entry.command) : null;
          if (d?.kind !== "control") throw new Error("unreachable");
          const { settings: _, ...env } = d.envelope;
          plain.add(env.key, env.cmd);
        }
        const ua = new ControlState({ root, ...oa });
        const ub = new ControlState({ root, ...ob });
        expect(applyAll(ua, plain.items).halt).toBeNull();
        expect(applyAll(ub, plain.items).halt).toBeNull();
        const rb = applyAll(b, log.items);
        if (a.settingsDigest === b.settingsDigest) {
          expect(rb.halt).toBeNull();
          expect(new TextDecoder().decode(ub.encode())).toBe(new TextDecoder().decode(ua.encode()));
        } else {
          expect(mismatch(rb.halt).fixedAt).toBe(1);
          expect(b.appliedIndex).toBe(0);
        }
      }),
      { numRuns: 300 },
    );
  });
});

describe("on a governed Raft cluster", () => {
  it("a member carries its settings only until its log has fixed them: later entries are version 1, decided under the fixed ones", async () => {
    const c = new GovernedCluster({ seed: 11, voters: ["n1", "n2", "n3"] });
    try {
      await c.elect();
      const n1 = c.gov("n1");
      const outcomes: ControlOutcome[] = [];
      for (let i = 0; i < 4; i++) outcomes.push(await c.known((o) => n1.claims.take({ holder: `w${i}`, resources: [{ key: `k${i}`, mode: "exclusive" }] }, o)));
      expect(outcomes.every(granted)).toBe(true);
      await c.until(() => c.allApplied(outcomes.at(-1)!.index!), 2_000, "every member applying the takes");
      const fixedAt = n1.controlView().fixedSettings!.fixedAt;
      // what the log holds: the entries up to and including the fixing one carry settings, none after it
      const versions = c.peer("n2").disk.entries.flatMap((e) => {
        const d = e.kind === "app" ? decodeEntry(e.command) : null;
        return d?.kind === "control" ? [[e.index, d.envelope.v] as const] : [];
      });
      expect(versions.filter(([i]) => i > fixedAt).length).toBeGreaterThanOrEqual(3);
      expect(versions.filter(([i, v]) => i > fixedAt && v !== 1)).toEqual([]);
      expect(versions.find(([i]) => i === fixedAt)?.[1]).toBe(2);
      for (const id of ["n1", "n2", "n3"]) expect(c.gov(id).controlView().fixedSettings?.fixedAt).toBe(fixedAt);
    } finally {
      await c.shutdown();
    }
  }, 60_000);

  it("two members, differing capacity: the mismatched member halts naming claims.capacity and never answers from a divergent state", async () => {
    const claimsOf = (id: string): ClaimsOptions | undefined => (id === "n1" ? { capacity: { pool: 2 } } : undefined);
    const c = new GovernedCluster({ seed: 7, voters: ["n1", "n2"], claimsOf });
    try {
      await c.elect();
      const n1 = c.gov("n1");
      const n2 = c.gov("n2");
      const halts: (ControlPlaneHaltedError | null)[] = [];
      n2.controlHalted.subscribe((e) => halts.push(e));
      const first = await c.known((o) => n1.claims.take({ holder: "w1", resources: [{ key: "pool", mode: "shared" }] }, o));
      const second = await c.known((o) => n1.claims.take({ holder: "w2", resources: [{ key: "pool", mode: "shared" }] }, o));
      expect([granted(first), granted(second)]).toEqual([true, true]);
      await c.until(() => n2.controlHalted.get() !== null, 2_000, "n2 halting");
      const halt = n2.controlHalted.get()!;
      expect(halts).toEqual([halt]);
      expect(mismatch(halt).differences.map((d) => d.setting)).toEqual(["claims.capacity"]);
      expect(halt.index).toBe(first.index);
      // n2 holds nothing decided under its own settings, and every call there fails with the halt
      expect(n2.controlView().appliedIndex).toBeLessThan(first.index!);
      expect(n2.claims.view().open()).toEqual([]);
      await expect(c.settle(n2.claims.take({ holder: "w3", resources: [{ key: "pool", mode: "shared" }] }, { timeoutMs: 1_000 }).catch((e: unknown) => e))).resolves.toBe(halt);
      await expect(c.settle(n2.sync({ timeoutMs: 1_000 }).catch((e: unknown) => e))).resolves.toBe(halt);
      expect(n1.controlHalted.get()).toBeNull();
      expect(n1.controlView().fixedSettings?.fixedAt).toBe(first.index);
    } finally {
      await c.shutdown();
    }
  }, 60_000);
});
