import { MAX, MIN } from "@heddle/ledger";
import type { AttachmentId, Rational } from "@heddle/ledger";
import { PolicyInvariantError } from "./errors.ts";
import { DeadlineTree } from "./deadline-tree.ts";
import type { DeadlineNode } from "./deadline-tree.ts";
import { boundedCap } from "./policy-config.ts";
import type { PolicyConfig } from "./policy-config.ts";
import type { Grant, PolicyEdge } from "./policy-edge.ts";

/** One candidate edge inside the engine. Virtual times are integers scaled by the round's `D`. */
interface Entry extends DeadlineNode {
  readonly attachment: AttachmentId;
  /** Scaled virtual time of one unit of service: `D · wd / wn`. */
  readonly step: bigint;
  /** The weight scaled to an integer: `wn · (Lw / wd)`. */
  readonly scaledWeight: bigint;
  readonly target: bigint;
  readonly maxGrant: bigint;
  outstanding: bigint;
  /** The quantum before the holdings trim (`min(quantum, need, maxGrant, capRoom)`). */
  untrimmed: bigint;
  /** `tree`: deadline `key + untrimmed·step`; `bound`: holdings bind, deadline `key + h·step`. */
  place: "tree" | "bound" | "gone";
  version: number;
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a;
  if (b < 0n) b = -b;
  while (b !== 0n) {
    const t = a % b;
    a = b;
    b = t;
  }
  return a;
}

function lcm(a: bigint, b: bigint): bigint {
  return (a / gcd(a, b)) * b;
}

function ceilDiv(a: bigint, b: bigint): bigint {
  return (a + b - 1n) / b;
}

function abs(a: bigint): bigint {
  return a < 0n ? -a : a;
}

function ceilAbs(r: Rational): bigint {
  return ceilDiv(abs(r.num), r.den);
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a < 0n && q * b !== a ? q - 1n : q;
}

function inRange(x: bigint): boolean {
  return x >= MIN && x <= MAX;
}

function min(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** A max-heap of tree entries by untrimmed quantum, with lazy deletion by version. */
class QuantumHeap {
  private readonly items: { q: bigint; entry: Entry; version: number }[] = [];

  push(entry: Entry): void {
    const a = this.items;
    a.push({ q: entry.untrimmed, entry, version: entry.version });
    let i = a.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const ai = a[i]!;
      const ap = a[p]!;
      if (ap.q >= ai.q) break;
      a[i] = ap;
      a[p] = ai;
      i = p;
    }
  }

  /** The live tree entry with the largest untrimmed quantum, dropping stale records on the way. */
  peek(): Entry | null {
    while (this.items.length > 0) {
      const top = this.items[0]!;
      if (top.entry.place === "tree" && top.entry.version === top.version) return top.entry;
      this.pop();
    }
    return null;
  }

  pop(): void {
    const a = this.items;
    const last = a.pop()!;
    if (a.length === 0) return;
    a[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && a[l]!.q > a[m]!.q) m = l;
      if (r < a.length && a[r]!.q > a[m]!.q) m = r;
      if (m === i) return;
      const t = a[i]!;
      a[i] = a[m]!;
      a[m] = t;
      i = m;
    }
  }
}

/**
 * Decides whether the reference round (repeated `pick`, policy.md §7) provably never leaves the signed
 * 64-bit range for these inputs, by bounding every product and sum it can form (magnitudes grow by at
 * most `h/w` per edge; denominators stay divisors of the round's lcms). When this holds, exact unbounded
 * arithmetic decides exactly as checked arithmetic does, so the engine may use it.
 *
 * The sixth conjunct alone bounds every value the round passes to checked arithmetic: `ev`, deadlines and
 * their comparisons by `Amax·dmax²`, the running `Σ w·ev` by `S·Lall·emax`, `V` and `ev` against `V` by
 * `Amax·dmax·Lall·SW·Lw`, and each of those is at most the sixth's product, because `Lall` is a multiple of
 * every `wn·wd` and every `d`, `S ≤ Amax·SW` and `emax ≤ dmax·Lw` (docs/mutation.md, policy, third session).
 * The other five are kept as the per-intermediate bounds they were derived from; a mutant confined to them
 * cannot change a decision.
 */
function roundIsOverflowFree(
  candidates: readonly { e: PolicyEdge; d: bigint }[],
  h: bigint,
  Lall: bigint,
  Lw: bigint,
): boolean {
  let Amax = 0n;
  let dmax = 1n;
  let wmax = 1n;
  let emax = 1n;
  let wdmax = 1n;
  let S = 0n;
  let SW = 0n;
  for (const { e, d } of candidates) {
    const w = e.record.weight;
    const g = e.gauge;
    const folded = g === null ? 0n : g.folded;
    // No test of units > MAX is needed: the sixth conjunct is ≥ A·d ≥ ⌈units·wd/wn⌉·wn ≥ units (d is a multiple of wn)
    const units = abs(e.baseIssued) + h + folded;
    const A =
      (g === null ? 0n : ceilAbs(g.floor)) +
      ceilDiv(units * w.den, w.num) +
      ceilDiv(abs(e.summary.returned) * w.den, w.num) +
      ceilAbs(e.virtualOffset) +
      // Stryker disable next-line ArithmeticOperator: slack: the units term already counts h, and an edge granted g so far bids q ≤ h − g, so |ev| + q/w stays within A without this term; h/wd only shrinks it
      ceilDiv(h * w.den, w.num) +
      1n;
    if (A > Amax) Amax = A;
    if (d > dmax) dmax = d;
    // Stryker disable next-line all: wmax feeds only the second conjunct, which the sixth implies (see above)
    if (w.num > wmax) wmax = w.num;
    // Stryker disable next-line all: wmax feeds only the second conjunct, which the sixth implies (see above)
    if (w.den > wmax) wmax = w.den;
    // Stryker disable next-line all: wdmax feeds only the fourth conjunct, which the sixth implies (see above)
    if (w.den > wdmax) wdmax = w.den;
    // Stryker disable next-line all: emax feeds only the third conjunct, which the sixth makes redundant (see above)
    if (w.den * d > emax) emax = w.den * d;
    // Stryker disable next-line all: S feeds only the third and fifth conjuncts, which the sixth makes redundant (see above)
    S += ceilDiv(w.num * A, w.den);
    SW += ceilDiv(w.num, w.den);
  }
  // Stryker disable next-line all: big feeds only the fifth conjunct, which the sixth implies (see above)
  const big = S > SW ? S : SW;
  return (
    // Stryker disable next-line ArithmeticOperator,EqualityOperator: the first conjunct is implied by the third and sixth (see above)
    2n * Amax * dmax * dmax <= MAX &&
    // Stryker disable next-line all: the second conjunct is implied by the sixth (see above)
    wmax * Amax * dmax <= MAX &&
    // Stryker disable next-line all: the third conjunct is made redundant by the sixth (see above)
    2n * S * Lall * emax <= MAX &&
    // Stryker disable next-line all: the fourth conjunct is implied by the sixth (see above)
    2n * SW * Lw * wdmax <= MAX &&
    // Stryker disable next-line all: the fifth conjunct is implied by the sixth (see above)
    Lall * Lw * big <= MAX &&
    Amax * dmax * Lall * SW * Lw <= MAX
  );
}

/**
 * The incremental allocation engine: the decisions of repeated `pick` (policy.md §7) — same winner,
 * same amount, same order — at O(log k) per grant instead of O(k). Candidates sit in an AVL tree keyed by
 * effective virtual service and augmented with the earliest virtual deadline per subtree, as in Linux
 * EEVDF's run-queue; the parent virtual time `V` is kept as an exact running weighted sum, so eligibility
 * is a prefix of the tree. Virtual times are integers scaled by the lcm of every denominator in the
 * round, so the arithmetic is exact.
 *
 * Candidates whose quantum is trimmed by the holdings (only possible once holdings fall below the
 * quantum) have deadlines that move with the holdings; they are kept in a side list scanned per pick.
 * Such a candidate ends the round when it wins, as it takes all the holdings.
 *
 * {@link AllocationEngine.prepare} returns `null` when it cannot prove that the reference round stays in
 * the 64-bit range (where `pick` might throw); callers then run the reference loop, which throws exactly
 * where the specification says.
 */
export class AllocationEngine {
  private readonly tree = new DeadlineTree();
  private readonly heap = new QuantumHeap();
  private readonly bound: Entry[] = [];
  /** Every candidate of the round, for building the tree and, lazily, the quantum heap. */
  private readonly entries: Entry[] = [];
  /** Whether `heap` tracks the tree entries: only needed once holdings can fall below a quantum. */
  private heapActive = false;
  private readonly quantum: bigint;
  private readonly cap: bigint | null;
  private holdings: bigint;
  /** `Σ scaledWeight · key` over live candidates. */
  private weightedSum = 0n;
  /** `Σ scaledWeight` over live candidates. */
  private weightSum = 0n;

  private constructor(quantum: bigint, cap: bigint | null, holdings: bigint) {
    this.quantum = quantum;
    this.cap = cap;
    this.holdings = holdings;
  }

  /**
   * Builds the engine for one round over already-validated inputs with `localHoldings > 0`, or returns
   * `null` if exactness against checked 64-bit `pick` cannot be guaranteed (duplicate ids — `allocate`
   * refuses them before it gets here, this guards direct callers — or values large enough that some
   * intermediate of the reference round might overflow).
   */
  static prepare(edges: readonly PolicyEdge[], config: PolicyConfig, localHoldings: bigint): AllocationEngine | null {
    const h = localHoldings;
    const cap = boundedCap(config);
    const seen = new Set<string>();
    const chosen: { e: PolicyEdge; d: bigint; outstanding: bigint; untrimmed: bigint }[] = [];
    let D = 1n;
    let Lw = 1n;
    let Lall = 1n;
    for (const e of edges) {
      if (seen.has(e.record.id)) return null;
      seen.add(e.record.id);
      const { issued, returned, spent } = e.summary;
      const committed = issued - returned;
      const outstanding = committed - spent;
      const need = e.demand.targetOutstanding - outstanding;
      if (!inRange(committed) || !inRange(outstanding) || !inRange(need)) return null;
      // A need ≤ 0 (§5 step 1's skip) gives untrimmed ≤ need ≤ 0, skipped below; the cap room between cannot
      // decline it, as a need ≤ 0 means outstanding ≥ target ≥ 0, so cap − outstanding stays in range.
      let untrimmed = min(min(config.quantum, need), e.demand.maximumUsefulGrant);
      if (cap !== null) {
        const room = cap - outstanding;
        if (!inRange(room)) return null;
        untrimmed = min(untrimmed, room);
      }
      if (untrimmed <= 0n) continue;
      // Over the round this edge's issuance rises by at most h: every integer it derives must stay in range.
      if (
        issued + h > MAX ||
        // Stryker disable next-line ConditionalExpression,EqualityOperator,ArithmeticOperator: implied by `issued + h > MAX` above, as validated edges have baseIssued ≤ issued; `>=` only declines more rounds, which the literal loop then decides
        e.baseIssued + h > MAX ||
        !inRange(committed + h) ||
        !inRange(outstanding + h) ||
        // Stryker disable next-line ArithmeticOperator: never true here (0 < need ≤ MAX and 0 < h ≤ MAX), so need + h can only decline more rounds, which the literal loop then decides
        !inRange(need - h) ||
        // Stryker disable next-line ConditionalExpression,ArithmeticOperator: never true here (room = cap − outstanding is in range and ≥ untrimmed > 0, h ≤ MAX); a changed sum can only decline more rounds
        (cap !== null && !inRange(cap - outstanding - h))
      ) {
        return null;
      }
      const w = e.record.weight;
      const floorDen = e.gauge === null ? 1n : e.gauge.floor.den;
      const d = lcm(lcm(lcm(1n, floorDen), w.num), e.virtualOffset.den);
      D = lcm(D, d);
      Lw = lcm(Lw, w.den);
      Lall = lcm(Lall, w.den * d);
      chosen.push({ e, d, outstanding, untrimmed });
    }
    if (!roundIsOverflowFree(chosen, h, Lall, Lw)) return null;

    const engine = new AllocationEngine(config.quantum, cap, h);
    for (const { e, outstanding, untrimmed } of chosen) {
      const w = e.record.weight;
      const step = w.den * (D / w.num);
      const g = e.gauge;
      const folded = g === null ? 0n : g.folded;
      const floorScaled = g === null ? 0n : g.floor.num * (D / g.floor.den);
      const key =
        floorScaled +
        (e.baseIssued - folded - e.summary.returned) * step +
        e.virtualOffset.num * (D / e.virtualOffset.den);
      const entry: Entry = {
        key,
        deadline: 0n,
        id: e.record.id,
        left: null,
        right: null,
        height: 1,
        best: null as unknown as DeadlineNode,
        attachment: e.record.id,
        step,
        scaledWeight: w.num * (Lw / w.den),
        target: e.demand.targetOutstanding,
        maxGrant: e.demand.maximumUsefulGrant,
        outstanding,
        untrimmed,
        place: "gone",
        version: 0,
      };
      entry.best = entry;
      engine.weightedSum += entry.scaledWeight * key;
      engine.weightSum += entry.scaledWeight;
      engine.entries.push(entry);
    }
    const inTree: Entry[] = [];
    for (const entry of engine.entries) {
      // Stryker disable next-line UpdateOperator: versions only need to differ between one entry's successive tree placements; here and in place() they move one way each, so −1 is as good as +1
      entry.version++;
      if (entry.untrimmed > h) {
        entry.place = "bound";
        engine.bound.push(entry);
      } else {
        entry.place = "tree";
        entry.deadline = entry.key + entry.untrimmed * entry.step;
        inTree.push(entry);
      }
    }
    inTree.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    engine.tree.build(inTree);
    // Stryker disable next-line CallExpression: cost only — unactivated here, the heap is activated by next() after the first grant, before its sweep, and then takes every tree entry (the re-placed winner included), so the sweep sees the same records
    engine.activateHeapIfNeeded();
    return engine;
  }

  /**
   * Tree entries only need watching for the holdings trim once holdings are below the quantum (no
   * untrimmed quantum exceeds it); the heap is built then, once.
   */
  private activateHeapIfNeeded(): void {
    // Stryker disable next-line LogicalOperator: cost only — with `&&` the heap is built in prepare and rebuilt at every call once holdings are below the quantum: an early heap has nothing to sweep (no quantum exceeds holdings ≥ quantum), and duplicate records of one version all go stale once their entry moves
    if (this.heapActive || this.holdings >= this.quantum) return;
    // Stryker disable next-line BooleanLiteral: cost only — the heap is then rebuilt at every call; a duplicate record of a live entry is the same record, and once the entry moves (version++) every copy is stale and dropped by peek
    this.heapActive = true;
    for (const e of this.entries) if (e.place === "tree") this.heap.push(e);
  }

  /**
   * Files a live candidate in the tree. When the holdings trim its quantum, they are below the quantum, so
   * the heap is active by the sweep that ends next() and holds the entry's record: the sweep moves it to the
   * side list.
   */
  private place(entry: Entry): void {
    // Stryker disable next-line UpdateOperator: a strictly monotone sequence either way (see prepare); only equality with an older heap record is ever tested
    entry.version++;
    entry.place = "tree";
    entry.deadline = entry.key + entry.untrimmed * entry.step;
    this.tree.insert(entry);
    if (this.heapActive) this.heap.push(entry);
  }

  /** The holdings still to delegate in this round. */
  get remainingHoldings(): bigint {
    return this.holdings;
  }

  /**
   * The next grant of the round — exactly what `pick` returns on the edges with every earlier grant
   * applied — and applies it; `null` when `pick` would return `null`.
   */
  next(): Grant | null {
    const h = this.holdings;
    if (h === 0n || this.weightSum === 0n) return null;
    const threshold = floorDiv(this.weightedSum, this.weightSum);

    let winner: Entry | null = this.tree.earliestEligible(threshold) as Entry | null;
    let winnerDeadline = winner === null ? 0n : winner.deadline;
    for (const b of this.bound) {
      // Every listed entry is still "bound" here: one leaves only by winning, and a side-list winner takes
      // all the holdings (its quantum exceeds them), after which next() answers null before this scan.
      if (b.key > threshold) continue;
      const deadline = b.key + h * b.step;
      if (winner === null || deadline < winnerDeadline || (deadline === winnerDeadline && b.id < winner.id)) {
        winner = b;
        winnerDeadline = deadline;
      }
    }
    if (winner === null) {
      throw new PolicyInvariantError(
        // Stryker disable next-line StringLiteral: unreachable — the threshold is the floor of the weighted mean of the live keys, so the least live key (an integer) is never above it, and every live entry is in the tree or the side list
        `allocation engine: empty eligible set at scaled V = ${this.weightedSum}/${this.weightSum}`,
      );
    }

    const amount = min(winner.untrimmed, h);
    if (winner.place === "tree") this.tree.remove(winner);
    winner.place = "gone";
    this.weightedSum -= winner.scaledWeight * winner.key;
    winner.key += amount * winner.step;
    winner.outstanding += amount;
    this.holdings = h - amount;

    const need = winner.target - winner.outstanding;
    let untrimmed = min(min(this.quantum, need), winner.maxGrant);
    if (this.cap !== null) untrimmed = min(untrimmed, this.cap - winner.outstanding);
    winner.untrimmed = untrimmed;
    // untrimmed ≤ need, so this is also the test `need > 0`.
    if (untrimmed > 0n) {
      this.weightedSum += winner.scaledWeight * winner.key;
      this.place(winner);
    } else {
      this.weightSum -= winner.scaledWeight;
    }

    // Holdings fell: tree entries whose quantum now exceeds them move to the side list.
    this.activateHeapIfNeeded();
    for (let top = this.heap.peek(); top !== null && top.untrimmed > this.holdings; top = this.heap.peek()) {
      // Stryker disable next-line CallExpression: cost only — the record stays on top, and once the entry is moved below (place "bound", version++) the next peek drops it as stale
      this.heap.pop();
      // Stryker disable next-line CallExpression: left in the tree, the entry's untrimmed deadline is strictly later than its trimmed one in the side list (same eligibility test), so the scan below still picks it wherever the tree would, and a side-list winner takes every remaining unit and ends the round
      this.tree.remove(top);
      top.place = "bound";
      // Stryker disable next-line UpdateOperator: a "bound" entry never returns to the tree, and heap records are only valid for place "tree"
      top.version++;
      this.bound.push(top);
    }
    return { attachment: winner.attachment, amount };
  }
}

/**
 * Runs a whole round on the engine, or returns `null` when the engine declines (see
 * {@link AllocationEngine.prepare}). Inputs must already be validated.
 */
export function allocateWithEngine(
  edges: readonly PolicyEdge[],
  config: PolicyConfig,
  localHoldings: bigint,
  maxGrants: number,
): Grant[] | null {
  // Stryker disable next-line ConditionalExpression,LogicalOperator: cost only — without the shortcut, zero holdings make next() answer null at once and maxGrants 0 never enters the loop, so the result is the same [] (or prepare declines and allocate's literal loop returns [])
  if (localHoldings === 0n || maxGrants === 0) return [];
  const engine = AllocationEngine.prepare(edges, config, localHoldings);
  if (engine === null) return null;
  const grants: Grant[] = [];
  while (grants.length < maxGrants) {
    const g = engine.next();
    if (g === null) break;
    grants.push(g);
  }
  return grants;
}
