/**
 * A linearizability checker for concurrent histories, after Porcupine (Athalye) and the Wing–Gong / Lowe
 * "just-in-time" search: walk the history's call/return events, tentatively linearize any call that is
 * pending, backtrack at a return whose operation was not yet linearized, and memoize (linearized set, state)
 * pairs so each configuration is explored once. Histories are first split into independent partitions (for a
 * key-value store: one per key), which keeps the search small (P-compositionality).
 */

/** One completed or pending operation of a history. `output: undefined` with `ret: Infinity` = outcome unknown. */
export interface Operation<I, O> {
  readonly client: number;
  readonly input: I;
  readonly output: O | undefined;
  readonly call: number;
  readonly ret: number;
}

/** A sequential specification: `step` says whether `output` is allowed from `state` and gives the next state. */
export interface Model<S, I, O> {
  init(): S;
  /** `output === undefined` means the outcome is unknown: any output is acceptable, the effect still applies. */
  step(state: S, input: I, output: O | undefined): { ok: boolean; next: S };
  /** A string equal for equal states (memoization key). */
  hash(state: S): string;
  /** Splits a history into independent sub-histories (optional). */
  partition?(ops: readonly Operation<I, O>[]): Operation<I, O>[][];
}

/** Result of a check: linearizable, not, or the search budget ran out (treat as a failure to prove). */
export type CheckResult = { readonly ok: true } | { readonly ok: false; readonly reason: "not-linearizable" | "budget"; readonly partition: number };

/** Default most search steps per partition. */
export const DEFAULT_CHECK_BUDGET = 2_000_000;

interface Node {
  readonly op: number;
  readonly isCall: boolean;
  match: Node | null;
  prev: Node | null;
  next: Node | null;
}

function checkPartition<S, I, O>(model: Model<S, I, O>, ops: readonly Operation<I, O>[], budget: number): boolean | "budget" {
  const events: { op: number; isCall: boolean; time: number }[] = [];
  ops.forEach((o, i) => {
    events.push({ op: i, isCall: true, time: o.call });
    events.push({ op: i, isCall: false, time: o.ret });
  });
  // Equal times count as overlapping: calls sort before returns, which can only make the check more permissive.
  events.sort((a, b) => a.time - b.time || (a.isCall === b.isCall ? a.op - b.op : a.isCall ? -1 : 1));
  const head: Node = { op: -1, isCall: false, match: null, prev: null, next: null };
  let tail = head;
  const calls: Node[] = [];
  for (const ev of events) {
    const n: Node = { op: ev.op, isCall: ev.isCall, match: null, prev: tail, next: null };
    tail.next = n;
    tail = n;
    if (ev.isCall) calls[ev.op] = n;
    else calls[ev.op]!.match = n;
  }
  const lift = (call: Node): void => {
    call.prev!.next = call.next;
    if (call.next) call.next.prev = call.prev;
    const ret = call.match!;
    ret.prev!.next = ret.next;
    if (ret.next) ret.next.prev = ret.prev;
  };
  const unlift = (call: Node): void => {
    const ret = call.match!;
    ret.prev!.next = ret;
    if (ret.next) ret.next.prev = ret;
    call.prev!.next = call;
    if (call.next) call.next.prev = call;
  };
  const words = Math.ceil(ops.length / 32) || 1;
  const linearized = new Uint32Array(words);
  const cache = new Set<string>();
  const stack: { call: Node; state: S }[] = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;
  while (head.next !== null) {
    if (++steps > budget) return "budget";
    if (entry === null) return false;
    if (entry.isCall) {
      const o = ops[entry.op]!;
      const r = model.step(state, o.input, o.output);
      let advanced = false;
      if (r.ok) {
        linearized[entry.op >> 5]! |= 1 << (entry.op & 31);
        const key = `${Array.from(linearized).join(",")}|${model.hash(r.next)}`;
        if (!cache.has(key)) {
          cache.add(key);
          stack.push({ call: entry, state });
          state = r.next;
          lift(entry);
          entry = head.next;
          advanced = true;
        } else linearized[entry.op >> 5]! &= ~(1 << (entry.op & 31));
      }
      if (!advanced) entry = entry.next;
    } else {
      const top = stack.pop();
      if (top === undefined) return false;
      state = top.state;
      linearized[top.call.op >> 5]! &= ~(1 << (top.call.op & 31));
      unlift(top.call);
      entry = top.call.next;
    }
  }
  return true;
}

/** Checks a history against a model; every partition must be linearizable. */
export function checkLinearizable<S, I, O>(model: Model<S, I, O>, history: readonly Operation<I, O>[], budget = DEFAULT_CHECK_BUDGET): CheckResult {
  const parts = model.partition ? model.partition(history) : [history.slice()];
  for (let p = 0; p < parts.length; p++) {
    const r = checkPartition(model, parts[p]!, budget);
    if (r === "budget") return { ok: false, reason: "budget", partition: p };
    if (!r) return { ok: false, reason: "not-linearizable", partition: p };
  }
  return { ok: true };
}

/** Input of the key-value model: put replaces, append concatenates, get reads. */
export type KvInput = { readonly op: "put" | "append"; readonly key: string; readonly value: string } | { readonly op: "get"; readonly key: string };

/**
 * The key-value register model used by the Raft tests: per-key string state, put/append answer `"ok"`, get
 * answers the current value (`""` when absent). Partitioned by key. A get with unknown outcome constrains
 * nothing and is dropped.
 */
export const kvModel: Model<string, KvInput, string> = {
  init: () => "",
  step(state, input, output) {
    switch (input.op) {
      case "put":
        return { ok: output === undefined || output === "ok", next: input.value };
      case "append":
        return { ok: output === undefined || output === "ok", next: state + input.value };
      case "get":
        return { ok: output === undefined || output === state, next: state };
    }
  },
  hash: (s) => s,
  partition(ops) {
    const byKey = new Map<string, Operation<KvInput, string>[]>();
    for (const o of ops) {
      if (o.input.op === "get" && o.output === undefined) continue;
      const list = byKey.get(o.input.key) ?? [];
      list.push(o);
      byKey.set(o.input.key, list);
    }
    return [...byKey.keys()].sort().map((k) => pruneUnobserved(byKey.get(k)!));
  },
};

/**
 * Drops writes whose outcome is unknown and whose value no read of the key ever returned (not even as a
 * substring). Sound: such a write can always be linearized last, where it changes no output, so the history is
 * linearizable with it exactly when it is without it. It keeps the search from branching on every subset of
 * unobserved pending writes, which is what makes histories with many timed-out calls expensive.
 */
function pruneUnobserved(ops: Operation<KvInput, string>[]): Operation<KvInput, string>[] {
  const seen = ops.filter((o) => o.input.op === "get" && o.output !== undefined).map((o) => o.output!);
  return ops.filter((o) => {
    if (o.input.op === "get" || o.ret !== Infinity || o.output !== undefined) return true;
    const v = o.input.value;
    return v === "" || seen.some((out) => out.includes(v));
  });
}

