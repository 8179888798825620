/**
 * Shared test vocabulary for `@heddle/ledger`: fast-check parameters (run count and seed from the
 * environment), a builder that writes canonical ledger JSON from a plain description (so fixtures
 * and generated states go through `EntitlementLedger.decode`), and generators of random states
 * drawn from the small pools of ledger.md §12.
 */
import fc from "fast-check";
import {
  AttachmentId,
  ByteWriter,
  EntitlementLedger,
  MAX as MAX_I64,
  GroupId,
  MintId,
  ReplicaId,
  Rational,
  Weight,
} from "../src/index.ts";
import type { Lifecycle, Refusal } from "../src/index.ts";

/** Property runs: `HEDDLE_RUNS` (nightly sets 20000), default 500. */
export const RUNS: number = Number(process.env.HEDDLE_RUNS ?? 500);

/**
 * fast-check parameters for one property: `numRuns` (never below 500 unless HEDDLE_RUNS says so)
 * and, when `HEDDLE_SEED` is set, that seed (plus `HEDDLE_PATH` to replay a shrunk path) so a
 * reported failure reproduces.
 */
export function params(numRuns: number = RUNS): fc.Parameters<unknown> {
  const p: fc.Parameters<unknown> = { numRuns };
  if (process.env.HEDDLE_SEED !== undefined) p.seed = Number(process.env.HEDDLE_SEED);
  if (process.env.HEDDLE_PATH !== undefined) p.path = process.env.HEDDLE_PATH;
  return p;
}

/** Short-hand id constructors. */
export const G = (s: string): GroupId => GroupId(s);
export const E = (s: string): AttachmentId => AttachmentId(s);
export const R = (s: string): ReplicaId => ReplicaId(s);
export const M = (s: string): MintId => MintId(s);

/** The result union of every mutator (ledger.md §3.10). */
export type MutationResult = ReturnType<EntitlementLedger["spend"]>;

/** The patch of a successful mutation; fails the test with the refusal otherwise. */
export function ok(r: MutationResult): EntitlementLedger {
  if (!r.ok) throw new Error(`expected ok, got refusal ${r.refusal.kind}: ${r.refusal.message}`);
  return r.patch;
}

/** The refusal of a refused mutation; fails the test if it succeeded. */
export function refused(r: MutationResult): Refusal {
  if (r.ok) throw new Error(`expected a refusal, got ok with patch ${r.patch.encode()}`);
  return r.refusal;
}

/** `view ⊔ patch` of a mutation that must succeed. */
export function apply(view: EntitlementLedger, r: MutationResult): EntitlementLedger {
  return view.join(ok(r));
}

/** `parent → child` prepared and activated under `id` (weight 1 unless given): the mutators must accept both. */
export function link(s: EntitlementLedger, id: AttachmentId, parent: GroupId, child: GroupId, w: Weight = Weight.ONE): EntitlementLedger {
  s = apply(s, s.prepare({ id, parent, child, weight: w }));
  return apply(s, s.activate(id));
}

/** A refusal as `kind: message`, the text a test pins. */
export function said(r: MutationResult): string {
  const f = refused(r);
  return `${f.kind}: ${f.message}`;
}

/** What `f` threw, as `Name: message`, or `"accepted"` when it returned. */
export function thrown(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    return `${(e as Error).name}: ${(e as Error).message}`;
  }
  return "accepted";
}

/** The char codes of an ASCII string (a string table entry, byte for byte). */
export const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));

/** A binary ledger frame by hand: the format byte, the string table, the component mask, then `body`. */
export function frame(strings: readonly string[], mask: number, body: (w: ByteWriter) => void): Uint8Array {
  const utf8 = new TextEncoder();
  const w = new ByteWriter().u8(1).uint(strings.length);
  for (const s of strings) {
    const b = utf8.encode(s);
    w.uint(b.length).bytes(b);
  }
  w.uint(mask);
  body(w);
  return w.finish();
}

/** A record as `[parent, child, num, den]` (den defaults to 1). */
export type RecordSpec = readonly [string, string, bigint, bigint?];
/** `key → replica → value`. */
export type CounterSpec = Readonly<Record<string, Readonly<Record<string, bigint>>>>;

/** A plain description of a ledger state; every part optional. */
export interface StateSpec {
  readonly records?: Readonly<Record<string, readonly RecordSpec[]>>;
  readonly mints?: Readonly<Record<string, readonly [string, string, bigint]>>;
  readonly issued?: CounterSpec;
  readonly returned?: CounterSpec;
  readonly leafSpent?: CounterSpec;
  readonly rollupSpent?: CounterSpec;
  readonly transfers?: Readonly<Record<string, CounterSpec>>;
  readonly lifecycle?: Readonly<Record<string, Lifecycle>>;
  /** `[floorNum, floorDen, folded]`. */
  readonly gauges?: Readonly<Record<string, readonly [bigint, bigint, bigint]>>;
}

const byKey = <T>(a: readonly [string, T], b: readonly [string, T]): number =>
  a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;

function gcd(a: bigint, b: bigint): bigint {
  a = a < 0n ? -a : a;
  while (b !== 0n) [a, b] = [b, a % b];
  return a;
}

function counterPairs(c: Readonly<Record<string, bigint>>): [string, string][] {
  return Object.entries(c)
    .filter(([, v]) => v !== 0n)
    .sort(byKey)
    .map(([k, v]) => [k, v.toString()]);
}

function counterComponent(c: CounterSpec | undefined): [string, [string, string][]][] {
  if (c === undefined) return [];
  return Object.entries(c)
    .map(([k, inner]): [string, [string, string][]] => [k, counterPairs(inner)])
    .filter(([, inner]) => inner.length > 0)
    .sort(byKey);
}

/**
 * The canonical encoding (ledger.md §10) of a described state, written independently of the
 * implementation: pairs sorted by UTF-16 code units, records reduced/deduplicated/sorted, zero
 * slots and empty lists dropped, empty components omitted.
 */
export function canonicalText(spec: StateSpec): string {
  const out: Record<string, unknown> = { format: "heddle-ledger/1" };
  const records = Object.entries(spec.records ?? {})
    .map(([id, rs]): [string, [string, string, string, string][]] => {
      const reduced = rs.map(([p, c, n, d = 1n]) => {
        const g = gcd(n, d);
        return [p, c, n / g, d / g] as const;
      });
      reduced.sort((a, b) =>
        a[0] !== b[0] ? (a[0] < b[0] ? -1 : 1)
        : a[1] !== b[1] ? (a[1] < b[1] ? -1 : 1)
        : a[2] !== b[2] ? (a[2] < b[2] ? -1 : 1)
        : a[3] < b[3] ? -1 : a[3] > b[3] ? 1 : 0,
      );
      const uniq: [string, string, string, string][] = [];
      for (const [p, c, n, d] of reduced) {
        const last = uniq[uniq.length - 1];
        const row: [string, string, string, string] = [p, c, n.toString(), d.toString()];
        if (last === undefined || last.join("\u0000") !== row.join("\u0000")) uniq.push(row);
      }
      return [id, uniq];
    })
    .filter(([, rs]) => rs.length > 0)
    .sort(byKey);
  if (records.length > 0) out.records = records;
  const mints = Object.entries(spec.mints ?? {})
    .sort(byKey)
    .map(([id, [root, holder, amount]]) => [id, [root, holder, amount.toString()]]);
  if (mints.length > 0) out.mints = mints;
  for (const fam of ["issued", "returned", "leafSpent", "rollupSpent"] as const) {
    const c = counterComponent(spec[fam]);
    if (c.length > 0) out[fam] = c;
  }
  const transfers = Object.entries(spec.transfers ?? {})
    .map(([k, rows]): [string, [string, [string, string][]][]] => [k, counterComponent(rows)])
    .filter(([, rows]) => rows.length > 0)
    .sort(byKey);
  if (transfers.length > 0) out.transfers = transfers;
  const lifecycle = Object.entries(spec.lifecycle ?? {}).sort(byKey);
  if (lifecycle.length > 0) out.lifecycle = lifecycle;
  const gauges = Object.entries(spec.gauges ?? {})
    .sort(byKey)
    .map(([id, [n, d, folded]]) => {
      const g = gcd(n, d);
      return [id, [(n / g).toString(), (d / g).toString(), folded.toString()]];
    });
  if (gauges.length > 0) out.gauges = gauges;
  return JSON.stringify(out);
}

/** The ledger described by `spec`, built through `decode` of its canonical text. */
export function state(spec: StateSpec): EntitlementLedger {
  return EntitlementLedger.decode(canonicalText(spec));
}

/** Every lifecycle name, in rank order. */
export const LIFECYCLES: readonly Lifecycle[] = ["PREPARED", "ACTIVE", "CLOSING", "RETIRED"];

/**
 * Pools of §12 ("≈3 edges, 3 groups, 3 replicas, 3 mint ids, all path keys"). Some ids sort
 * differently by UTF-16 code unit than by code point or locale (`"\u{1F600}"` is the surrogate
 * pair D83D DE00, below `"\uFFFF"`; `"Z" < "a"`), so an implementation that sorts any other way
 * shows up in encodings and reports.
 */
export const POOL = {
  edges: ["e1", "e\u{1F600}", "e\uFFFF"],
  groups: ["g", "Z", "h\u{1F600}", "h\uFFFF"],
  replicas: ["r1", "R2", "r\u{1F600}"],
  mints: ["m1", "m2", "m\uFFFF"],
} as const;
const PATH_KEYS = ["", ...POOL.edges, "ghost"];

const oneOf = <T>(xs: readonly T[]): fc.Arbitrary<T> => fc.constantFrom(...xs);
const smallUnits = fc.bigInt({ min: 0n, max: 1000n });
/** Counter values near the 64-bit bound as well as small ones (for overflow determinism, I-15). */
const bigUnits = fc.oneof(
  fc.bigInt({ min: 0n, max: 1000n }),
  fc.constantFrom(MAX_I64, MAX_I64 - 1n, MAX_I64 / 2n, MAX_I64 / 2n + 1n, MAX_I64 / 3n),
  fc.bigInt({ min: MAX_I64 - 1000n, max: MAX_I64 }),
);

function counterArb(keys: readonly string[], units: fc.Arbitrary<bigint>): fc.Arbitrary<CounterSpec> {
  return fc.dictionary(oneOf(keys), fc.dictionary(oneOf(POOL.replicas), units, { maxKeys: 3 }), {
    maxKeys: keys.length,
  });
}

const weightArb = fc.constantFrom<[bigint, bigint]>([1n, 1n], [3n, 1n], [2n, 4n], [2n, 3n], [1n, 2n]);

const recordArb: fc.Arbitrary<RecordSpec> = fc
  .tuple(oneOf(POOL.groups), oneOf(POOL.groups), weightArb)
  .filter(([p, c]) => p !== c)
  .map(([p, c, [n, d]]) => [p, c, n, d] as const);

/** The small floors of §12's pools: numerators −50…1000 over denominators 1…6 (reads stay in range). */
const smallFloor: fc.Arbitrary<readonly [bigint, bigint]> = fc.tuple(
  fc.bigInt({ min: -50n, max: 1000n }),
  fc.bigInt({ min: 1n, max: 6n }),
);

/**
 * Floors across the whole decodable range (§2.1: num −MAX…MAX, den 1…MAX): small ones, int64-sized
 * numerators and denominators, powers of two whose cross products leave I64, and near neighbours
 * (2^40 vs 1/2^40 is the case where a checked compare throws in one merge order only). Any pair of
 * these must still join (§3.8, README "Deviations").
 */
export const extremeFloorArb: fc.Arbitrary<readonly [bigint, bigint]> = fc.oneof(
  smallFloor,
  fc.tuple(
    fc.oneof(
      fc.constantFrom(0n, 1n, -1n, 2n, MAX_I64, -MAX_I64, MAX_I64 - 1n, 1n << 40n, -(1n << 40n), 1n << 62n, -(1n << 62n)),
      fc.bigInt({ min: -MAX_I64, max: MAX_I64 }),
    ),
    fc.oneof(
      fc.constantFrom(1n, 2n, 3n, 1n << 40n, 1n << 62n, MAX_I64, MAX_I64 - 1n),
      fc.bigInt({ min: 1n, max: MAX_I64 }),
    ),
  ),
);

function stateSpecWith(
  units: fc.Arbitrary<bigint>,
  floor: fc.Arbitrary<readonly [bigint, bigint]> = smallFloor,
  folded: fc.Arbitrary<bigint> = smallUnits,
): fc.Arbitrary<StateSpec> {
  return fc.record({
    records: fc.dictionary(oneOf(POOL.edges), fc.array(recordArb, { minLength: 1, maxLength: 2 }), {
      maxKeys: 3,
    }),
    mints: fc.dictionary(
      oneOf(POOL.mints),
      fc.tuple(oneOf(POOL.groups), oneOf(POOL.replicas), units),
      { maxKeys: 3 },
    ),
    issued: counterArb(POOL.edges, units),
    returned: counterArb(POOL.edges, units),
    leafSpent: counterArb(POOL.edges, units),
    rollupSpent: counterArb(POOL.edges, units),
    transfers: fc.dictionary(oneOf(PATH_KEYS), counterArb(POOL.replicas, units), { maxKeys: 3 }),
    lifecycle: fc.dictionary(oneOf(POOL.edges), oneOf(LIFECYCLES), { maxKeys: 3 }),
    gauges: fc.dictionary(
      oneOf(POOL.edges),
      fc.tuple(floor, folded).map(([[n, d], f]) => [n, d, f] as const),
      { maxKeys: 3 },
    ),
  });
}

/**
 * Random states per §12: divergent record sets (0–2 records per id), every lifecycle, gauges
 * with negative floors, counters in 0…1000, transfer rows under every path key (including one
 * that names no edge), mints from the mint-id pool.
 */
export const stateSpecArb: fc.Arbitrary<StateSpec> = stateSpecWith(smallUnits);

/** Random states whose counters and mints are often near 2^63 − 1. */
export const bigStateSpecArb: fc.Arbitrary<StateSpec> = stateSpecWith(bigUnits);

/**
 * Random states whose gauge floors span the whole decodable range (`extremeFloorArb`) and whose
 * counters are often near 2^63 − 1: the join must stay total and a semilattice on all of them.
 */
export const extremeStateSpecArb: fc.Arbitrary<StateSpec> = stateSpecWith(bigUnits, extremeFloorArb, bigUnits);

/** A random ledger from `extremeStateSpecArb`. */
export const extremeLedgerArb: fc.Arbitrary<EntitlementLedger> = extremeStateSpecArb.map(state);

/** A random ledger built by decoding the canonical text of a random state description. */
export const ledgerArb: fc.Arbitrary<EntitlementLedger> = stateSpecArb.map(state);

/** Canonical text of a random state (for `encode(decode(t)) === t`). */
export const canonicalTextArb: fc.Arbitrary<string> = stateSpecArb.map(canonicalText);

/** Convenience re-exports for test files. */
export { EntitlementLedger, Rational, Weight };
