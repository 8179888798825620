/**
 * Test helper: counts the Map and Set writes made while `fn` runs (`Map.prototype.set`, `Set.prototype.add`; a
 * copy of a map writes each of its entries through `set`, so copies count too). A test can then check that a step
 * costs work independent of the state already held — without timing anything. Not reentrant; synchronous `fn` only.
 */
export function collectionWrites<T>(fn: () => T): { writes: number; result: T } {
  const set = Map.prototype.set;
  const add = Set.prototype.add;
  let writes = 0;
  Map.prototype.set = function (this: Map<unknown, unknown>, k: unknown, v: unknown) {
    writes++;
    return set.call(this, k, v);
  };
  Set.prototype.add = function (this: Set<unknown>, v: unknown) {
    writes++;
    return add.call(this, v);
  };
  try {
    const result = fn();
    return { writes, result };
  } finally {
    Map.prototype.set = set;
    Set.prototype.add = add;
  }
}
