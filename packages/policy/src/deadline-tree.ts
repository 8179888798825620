/**
 * A node of {@link DeadlineTree}: one competing edge, keyed by scaled effective virtual service
 * (`key`, then `id`), carrying its scaled virtual deadline `deadline`. The tree owns the link fields.
 */
export interface DeadlineNode {
  key: bigint;
  deadline: bigint;
  readonly id: string;
  left: DeadlineNode | null;
  right: DeadlineNode | null;
  height: number;
  /** The node of smallest `(deadline, id)` in this subtree. */
  best: DeadlineNode;
}

/** `(deadline, id)` order: true iff `a` beats `b`. */
function earlier(a: DeadlineNode, b: DeadlineNode): boolean {
  if (a.deadline !== b.deadline) return a.deadline < b.deadline;
  // Stryker disable next-line EqualityOperator: ids are unique among a parent's edges and each edge has one node, so equal ids mean one node, which is never compared with itself (`best` is taken from other nodes)
  return a.id < b.id;
}

function keyBefore(a: DeadlineNode, b: DeadlineNode): boolean {
  if (a.key !== b.key) return a.key < b.key;
  // Stryker disable next-line EqualityOperator: the inserted node is not yet in the tree and `removeAt` tests identity first, so the two ids always differ
  return a.id < b.id;
}

function heightOf(n: DeadlineNode | null): number {
  return n === null ? 0 : n.height;
}

function refresh(n: DeadlineNode): void {
  n.height = 1 + Math.max(heightOf(n.left), heightOf(n.right));
  let best = n;
  if (n.left !== null && earlier(n.left.best, best)) best = n.left.best;
  if (n.right !== null && earlier(n.right.best, best)) best = n.right.best;
  n.best = best;
}

function rotateRight(n: DeadlineNode): DeadlineNode {
  const l = n.left as DeadlineNode;
  n.left = l.right;
  l.right = n;
  refresh(n);
  refresh(l);
  return l;
}

function rotateLeft(n: DeadlineNode): DeadlineNode {
  const r = n.right as DeadlineNode;
  n.right = r.left;
  r.left = n;
  refresh(n);
  refresh(r);
  return r;
}

function rebalance(n: DeadlineNode): DeadlineNode {
  refresh(n);
  const balance = heightOf(n.left) - heightOf(n.right);
  if (balance > 1) {
    const l = n.left as DeadlineNode;
    if (heightOf(l.left) < heightOf(l.right)) n.left = rotateLeft(l);
    return rotateRight(n);
  }
  if (balance < -1) {
    const r = n.right as DeadlineNode;
    if (heightOf(r.right) < heightOf(r.left)) n.right = rotateRight(r);
    return rotateLeft(n);
  }
  return n;
}

function insertAt(root: DeadlineNode | null, node: DeadlineNode): DeadlineNode {
  if (root === null) return node;
  if (keyBefore(node, root)) root.left = insertAt(root.left, node);
  else root.right = insertAt(root.right, node);
  return rebalance(root);
}

function removeMin(root: DeadlineNode): { rest: DeadlineNode | null; min: DeadlineNode } {
  if (root.left === null) return { rest: root.right, min: root };
  const r = removeMin(root.left);
  root.left = r.rest;
  return { rest: rebalance(root), min: r.min };
}

function removeAt(root: DeadlineNode | null, node: DeadlineNode): DeadlineNode | null {
  // Stryker disable next-line StringLiteral: unreachable: the engine removes only entries whose place is "tree", which are exactly the nodes it built or inserted and has not removed
  if (root === null) throw new Error(`deadline tree: node ${node.id} is not in the tree`);
  if (root === node) {
    if (root.left === null) return root.right;
    if (root.right === null) return root.left;
    const { rest, min } = removeMin(root.right);
    min.left = root.left;
    min.right = rest;
    return rebalance(min);
  }
  if (keyBefore(node, root)) root.left = removeAt(root.left, node);
  else root.right = removeAt(root.right, node);
  return rebalance(root);
}

/**
 * An AVL tree of competing edges ordered by `(key, id)` and augmented with each subtree's earliest
 * `(deadline, id)` — the shape of Linux EEVDF's run-queue. `earliestEligible(t)` returns the node of
 * smallest `(deadline, id)` among those with `key ≤ t` in O(log n). Nodes must not change `key`,
 * `deadline` or `id` while inside the tree.
 */
export class DeadlineTree {
  private root: DeadlineNode | null = null;
  private count = 0;

  /** Number of nodes. */
  get size(): number {
    return this.count;
  }

  /**
   * Replaces the contents with `nodes`, which must be sorted by `(key, id)` without repeats: a perfectly
   * balanced tree built in O(n), cheaper than n inserts.
   */
  build(nodes: readonly DeadlineNode[]): void {
    const make = (lo: number, hi: number): DeadlineNode | null => {
      if (lo > hi) return null;
      const mid = (lo + hi) >>> 1;
      const n = nodes[mid] as DeadlineNode;
      n.left = make(lo, mid - 1);
      n.right = make(mid + 1, hi);
      refresh(n);
      return n;
    };
    this.root = make(0, nodes.length - 1);
    this.count = nodes.length;
  }

  /** Inserts `node` (its `(key, id)` must be unique in the tree). */
  insert(node: DeadlineNode): void {
    node.left = null;
    node.right = null;
    node.height = 1;
    node.best = node;
    this.root = insertAt(this.root, node);
    this.count++;
  }

  /** Removes `node`, which must be in the tree with the key it was inserted with. */
  remove(node: DeadlineNode): void {
    this.root = removeAt(this.root, node);
    node.left = null;
    node.right = null;
    this.count--;
  }

  /** The node of smallest `(deadline, id)` among those with `key ≤ threshold`, or `null`. */
  earliestEligible(threshold: bigint): DeadlineNode | null {
    let best: DeadlineNode | null = null;
    let n = this.root;
    while (n !== null) {
      if (n.key <= threshold) {
        if (best === null || earlier(n, best)) best = n;
        if (n.left !== null && earlier(n.left.best, best)) best = n.left.best;
        n = n.right;
      } else {
        n = n.left;
      }
    }
    return best;
  }
}
