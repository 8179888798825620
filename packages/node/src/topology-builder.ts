import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, Weight } from "@heddle/ledger";
import type { AttachmentRecord, Refusal } from "@heddle/ledger";

/** A weight as written in a tree: a positive integer `n` (= n/1) or a pair `[num, den]`. */
export type WeightSpec = number | bigint | readonly [number | bigint, number | bigint];

/** One group of a topology tree, with the weight of the edge from its parent. */
export interface TopologyNode {
  readonly name: string;
  readonly weight: WeightSpec;
  readonly children: readonly TopologyNode[];
  /** Edge generation (≥ 1). Generation 1 has the plain id; a reshape uses a higher one (ledger.md §8). */
  readonly generation: number;
}

/** The most groups one tree may hold (besides its root). */
export const MAX_TOPOLOGY_GROUPS = 10_000;
/** The deepest a tree may nest (edges from the root to the deepest leaf). */
export const MAX_TOPOLOGY_DEPTH = 64;
/** Separates parent and child in an edge id. */
export const EDGE_ARROW = "→";
/** Introduces a generation suffix in an edge id. */
export const GENERATION_MARK = "@";

/** Why a tree does not lower. */
export type TopologyErrorKind = "bad-name" | "duplicate-group" | "bad-weight" | "bad-generation" | "cycle" | "too-large";

/** A topology tree that cannot be lowered: a caller bug in static configuration, named by `kind`. */
export class TopologyError extends Error {
  readonly kind: TopologyErrorKind;

  constructor(kind: TopologyErrorKind, message: string) {
    super(message);
    this.name = "TopologyError";
    this.kind = kind;
  }
}

/** A group with children. `weight` is its edge's weight under its parent. */
export function group(name: string, weight: WeightSpec, children: readonly TopologyNode[], opts: { generation?: number } = {}): TopologyNode {
  return Object.freeze({ name, weight, children: Object.freeze([...children]), generation: opts.generation ?? 1 });
}

/** A leaf group (a lane where work is reserved and charged). */
export function lane(name: string, weight: WeightSpec, opts: { generation?: number } = {}): TopologyNode {
  return group(name, weight, [], opts);
}

/**
 * The id of the edge `parent → child` of generation `generation`: `parent→child` for generation 1,
 * `parent→child@g` for later ones. Names may not contain `→` or `@`, so distinct edges get distinct ids.
 */
export function edgeId(parent: string, child: string, generation = 1): AttachmentId {
  return AttachmentId(`${parent}${EDGE_ARROW}${child}${generation === 1 ? "" : `${GENERATION_MARK}${generation}`}`);
}

function toBig(x: number | bigint, what: string): bigint {
  if (typeof x === "bigint") return x;
  if (typeof x !== "number" || !Number.isSafeInteger(x)) throw new TopologyError("bad-weight", `${what} must be an integer, got ${String(x)}`);
  return BigInt(x);
}

/** The {@link Weight} a spec denotes; throws {@link TopologyError} `bad-weight` naming `where`. */
export function weightOf(spec: WeightSpec, where = "weight"): Weight {
  const [n, d] = Array.isArray(spec) ? spec : [spec as number | bigint, 1n];
  if (Array.isArray(spec) && spec.length !== 2) throw new TopologyError("bad-weight", `${where}: a weight pair must be [num, den]`);
  const num = toBig(n as number | bigint, `${where} numerator`);
  const den = toBig(d as number | bigint, `${where} denominator`);
  try {
    return Weight.of(num, den);
  } catch (e) {
    throw new TopologyError("bad-weight", `${where}: ${(e as Error).message}`);
  }
}

function checkName(name: unknown, where: string): string {
  if (typeof name !== "string" || name.length === 0 || !name.isWellFormed()) {
    throw new TopologyError("bad-name", `${where}: a group name must be a non-empty, well-formed string`);
  }
  if (name.includes(EDGE_ARROW) || name.includes(GENERATION_MARK)) {
    throw new TopologyError("bad-name", `${where}: group name ${JSON.stringify(name)} may not contain '${EDGE_ARROW}' or '${GENERATION_MARK}'`);
  }
  return name;
}

/**
 * Lowers a tree written as data to its attachment records: one record per edge, in depth-first
 * pre-order (a parent's edge before its children's, children in the order written), ids from
 * {@link edgeId}. The same tree always gives the same records. Throws {@link TopologyError} for a bad or
 * repeated group name (a name on its own ancestor path is a `cycle`), a bad weight or generation, or a
 * tree beyond {@link MAX_TOPOLOGY_GROUPS} / {@link MAX_TOPOLOGY_DEPTH}.
 */
export function lowerTopology(root: string, children: readonly TopologyNode[]): AttachmentRecord[] {
  checkName(root, "root");
  const out: AttachmentRecord[] = [];
  const where = new Map<string, string>([[root, "the root"]]);
  const ancestry: string[] = [root];

  function visit(parent: string, nodes: readonly TopologyNode[]): void {
    if (!Array.isArray(nodes)) throw new TypeError(`children of ${parent} must be an array`);
    for (const node of nodes) {
      const name = checkName(node?.name, `a child of ${JSON.stringify(parent)}`);
      const here = [...ancestry, name].join(` ${EDGE_ARROW} `);
      if (ancestry.includes(name)) throw new TopologyError("cycle", `cycle: ${here}`);
      const seen = where.get(name);
      if (seen !== undefined) throw new TopologyError("duplicate-group", `group ${JSON.stringify(name)} appears twice: at ${seen} and at ${here}`);
      if (where.size - 1 >= MAX_TOPOLOGY_GROUPS) throw new TopologyError("too-large", `a tree may hold at most ${MAX_TOPOLOGY_GROUPS} groups`);
      if (ancestry.length > MAX_TOPOLOGY_DEPTH) throw new TopologyError("too-large", `a tree may nest at most ${MAX_TOPOLOGY_DEPTH} levels (at ${here})`);
      if (!Number.isSafeInteger(node.generation) || node.generation < 1) {
        throw new TopologyError("bad-generation", `${here}: generation must be an integer ≥ 1, got ${String(node.generation)}`);
      }
      where.set(name, here);
      out.push(
        Object.freeze({
          id: edgeId(parent, name, node.generation),
          parent: GroupId(parent),
          child: GroupId(name),
          weight: weightOf(node.weight, `weight of ${here}`),
        }),
      );
      ancestry.push(name);
      visit(name, node.children);
      ancestry.pop();
    }
  }

  visit(root, children);
  return out;
}

/** The outcome of {@link prepareAndActivate}: the joined patch and the ledger with it, or the first refusal. */
export type TopologyPatchResult =
  | { ok: true; patch: EntitlementLedger; ledger: EntitlementLedger }
  | { ok: false; edge: AttachmentId; step: "prepare" | "activate"; refusal: Refusal };

/**
 * The ledger patch that creates `records` as new ACTIVE generations on `base` (ledger.md §8 "create
 * child"): for each record in order, `prepare` then `activate`, each computed on the view that already
 * absorbed the previous patches (the threading rule, ledger.md §4.4). It only creates: closing and
 * retiring old generations of a reshape are separate, later steps, and a prepared edge that will not be
 * used is retired, never closed (ledger.md ⟨1.1⟩: only `activate` makes an edge live). Records may come
 * in any order; a child's edge before its parent's is a detached window (ledger.md §5.2) that closes
 * once the parent's edge is in, so the result is usable only if every record descends from the mint
 * root. Stops at the first refusal.
 */
export function prepareAndActivate(base: EntitlementLedger, records: readonly AttachmentRecord[]): TopologyPatchResult {
  // A mutable working copy: each step joins in O(its patch), so n records cost O(n), not O(n²).
  const work = new LedgerReplica(base);
  const patch = new LedgerReplica();
  for (const rec of records) {
    const p = work.prepare(rec);
    if (!p.ok) return { ok: false, edge: rec.id, step: "prepare", refusal: p.refusal };
    patch.apply(p.patch);
    const a = work.activate(rec.id);
    if (!a.ok) return { ok: false, edge: rec.id, step: "activate", refusal: a.refusal };
    patch.apply(a.patch);
  }
  return { ok: true, patch: patch.snapshot(), ledger: work.snapshot() };
}
