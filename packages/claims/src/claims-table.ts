import { claimKey, compareCodeUnits, idProblem } from "./claim-key.ts";
import type {
  Availability,
  Blocked,
  ClaimMode,
  ClaimsOptions,
  ClaimsTable,
  Grant,
  Holding,
  LapsedClaim,
  TakeOutcome,
  TakeRefused,
  TakeRequest,
} from "./claims-types.ts";
import { EXPIRY_INDEX_SLACK, MAX_LABEL_LENGTH, MAX_RESOURCES_PER_TAKE, MAX_ROSTER_KEYS, MAX_TTL_MS } from "./limits.ts";
import { wholeMs } from "./whole-ms.ts";

/** The format tag of the table encoding; a decoder refuses any other. */
export const CLAIMS_FORMAT = "heddle-claims/1";

/** A claim as stored: a holding plus its lease length and its place in the order taken. */
export interface ClaimRecord {
  readonly seq: number;
  readonly key: string;
  readonly holder: string;
  readonly mode: ClaimMode;
  readonly token: number;
  readonly since: number;
  readonly ttlMs: number | undefined;
  expiresAt: number | undefined;
  readonly scope: string | undefined;
  readonly label: string | undefined;
}

/** Options after validation: the form the table and its encoding work from. */
export interface TableConfig {
  readonly roster: readonly string[] | undefined;
  readonly rosterSet: ReadonlySet<string> | undefined;
  readonly capacity: ReadonlyMap<string, number | null>;
  readonly maxPerHolder: number | undefined;
  readonly scopeEnded: ((scope: string) => boolean) | undefined;
}

const checkTime = wholeMs;

/** Expiry-heap order: the earlier expiry first, then the older claim (smaller seq). */
function earlier(a: readonly [number, number], b: readonly [number, number]): boolean {
  return a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
}

/** Validates `ClaimsOptions` into a `TableConfig`; a bad option is a bug of the caller and throws `RangeError`. */
export function tableConfig(options: ClaimsOptions = {}): TableConfig {
  let roster: string[] | undefined;
  let rosterSet: Set<string> | undefined;
  if (options.roster !== undefined) {
    if (options.roster.length > MAX_ROSTER_KEYS) throw new RangeError(`roster lists more than ${MAX_ROSTER_KEYS} keys`);
    roster = [];
    rosterSet = new Set();
    for (const raw of options.roster) {
      const key = typeof raw === "string" ? claimKey(raw) : raw;
      const problem = idProblem(key, "roster key");
      if (problem !== undefined) throw new RangeError(problem);
      if (rosterSet.has(key)) throw new RangeError(`roster lists ${JSON.stringify(key)} twice`);
      rosterSet.add(key);
      roster.push(key);
    }
  }
  const capacity = new Map<string, number | null>();
  const entries = Object.entries(options.capacity ?? {});
  if (entries.length > MAX_ROSTER_KEYS) throw new RangeError(`capacity lists more than ${MAX_ROSTER_KEYS} keys`);
  for (const [raw, cap] of entries) {
    const key = claimKey(raw);
    const problem = idProblem(key, "capacity key");
    if (problem !== undefined) throw new RangeError(problem);
    if (capacity.has(key)) throw new RangeError(`capacity lists ${JSON.stringify(key)} twice (after trimming)`);
    if (rosterSet !== undefined && !rosterSet.has(key)) {
      throw new RangeError(`capacity names ${JSON.stringify(key)}, which is not on the roster`);
    }
    if (cap !== null && !(Number.isSafeInteger(cap) && cap >= 1)) {
      throw new RangeError(`capacity of ${JSON.stringify(key)} must be a safe integer ≥ 1 or null, got ${String(cap)}`);
    }
    capacity.set(key, cap);
  }
  const max = options.maxPerHolder;
  if (max !== undefined && !(Number.isSafeInteger(max) && max >= 1)) {
    throw new RangeError(`maxPerHolder must be a safe integer ≥ 1, got ${String(max)}`);
  }
  return { roster, rosterSet, capacity, maxPerHolder: max, scopeEnded: options.scopeEnded };
}

function holdingOf(r: ClaimRecord): Holding {
  const h: { -readonly [K in keyof Holding]: Holding[K] } = {
    key: r.key,
    holder: r.holder,
    mode: r.mode,
    token: r.token,
    since: r.since,
  };
  if (r.scope !== undefined) h.scope = r.scope;
  if (r.label !== undefined) h.label = r.label;
  if (r.expiresAt !== undefined) h.expiresAt = r.expiresAt;
  return h;
}

function requestProblem(request: TakeRequest): string | undefined {
  if (typeof request !== "object" || request === null) return "request must be an object";
  const holderProblem = idProblem(request.holder, "holder");
  if (holderProblem !== undefined) return holderProblem;
  if (!Array.isArray(request.resources) || request.resources.length === 0) return "resources must be a non-empty list";
  if (request.resources.length > MAX_RESOURCES_PER_TAKE) {
    return `a take may name at most ${MAX_RESOURCES_PER_TAKE} resources`;
  }
  const seen = new Map<string, number>();
  for (const [i, r] of request.resources.entries()) {
    if (typeof r !== "object" || r === null || typeof r.key !== "string") return "each resource needs a string key";
    const key = claimKey(r.key);
    const problem = idProblem(key, "key");
    if (problem !== undefined) return problem;
    if (r.mode !== "exclusive" && r.mode !== "shared") return `mode of ${JSON.stringify(key)} must be 'exclusive' or 'shared'`;
    const first = seen.get(key);
    if (first !== undefined) return `resources[${i}].key repeats resources[${first}].key ${JSON.stringify(key)} (keys compare after trimming white space)`;
    seen.set(key, i);
  }
  if (request.scope !== undefined) {
    const problem = idProblem(request.scope, "scope");
    if (problem !== undefined) return problem;
  }
  if (request.ttlMs !== undefined && !(Number.isSafeInteger(request.ttlMs) && request.ttlMs >= 1 && request.ttlMs <= MAX_TTL_MS)) {
    return `ttlMs must be a whole number of ms from 1 to ${MAX_TTL_MS} (MAX_TTL_MS, 100 years)`;
  }
  if (request.label !== undefined && (typeof request.label !== "string" || request.label.length > MAX_LABEL_LENGTH)) {
    return `label must be a string of at most ${MAX_LABEL_LENGTH} code units`;
  }
  return undefined;
}

/** The in-process claims table; the replicated one is the same class applied from a log. */
class Table implements ClaimsTable {
  readonly #config: TableConfig;
  /** Every recorded claim, by `seq`: a Map iterates in insertion order, which is the order taken. */
  readonly #order = new Map<number, ClaimRecord>();
  /**
   * Recorded claims per key, in the order taken. A key whose last claim goes stays
   * with an empty list until `#compact`: deleting and re-adding string keys of a
   * large Map is an order of magnitude slower in V8 than leaving them.
   */
  #byKey = new Map<string, ClaimRecord[]>();
  #emptyKeys = 0;
  /** Recorded claim per holder and key (at most one). */
  readonly #byHolder = new Map<string, Map<string, ClaimRecord>>();
  /** Recorded claims per scope. */
  readonly #byScope = new Map<string, Set<ClaimRecord>>();
  #seq = 0;
  #now = 0;
  #lastToken = 0;
  /**
   * Leased claims by expiry: a binary min-heap of [expiresAt, seq], ordered by expiresAt then seq. Entries go stale
   * (a release, a renewal that moved the expiry) and are skipped when they reach the top; a renewal pushes its new
   * expiry. Derived: not encoded, rebuilt by `restore`. Bounded: each leased record has one live entry, so
   * `#expiry.length - #leased` entries are stale; once they pass max(EXPIRY_INDEX_SLACK, #leased) the heap is rebuilt
   * from the records (`#rebuildExpiry`), and `purge` rebuilds it whenever any are stale.
   */
  #expiry: [number, number][] = [];
  /** Recorded claims with a lease (`expiresAt` set; `ttlMs` and `expiresAt` always come together). */
  #leased = 0;

  constructor(config: TableConfig) {
    this.#config = config;
  }

  get now(): number {
    return this.#now;
  }

  get lastToken(): number {
    return this.#lastToken;
  }

  /** Entries in the expiry index, stale ones included (read by tests through `expiryIndexSize`). */
  get expiryEntries(): number {
    return this.#expiry.length;
  }

  /** Restores a decoded state; only `decodeClaims` calls it, on an empty table. */
  restore(now: number, lastToken: number, records: readonly Omit<ClaimRecord, "seq">[]): void {
    this.#now = now;
    this.#lastToken = lastToken;
    for (const r of records) this.#insert({ ...r, seq: this.#seq++ });
  }

  // ── time ──────────────────────────────────────────────────────────────

  /** Mutators move the table's clock forward only: an earlier `now` is judged as the latest. */
  #advance(now: number | undefined): number {
    if (now === undefined) return this.#now;
    const t = checkTime(now, "now");
    if (t > this.#now) this.#now = t;
    return this.#now;
  }

  #readTime(now: number | undefined): number {
    return now === undefined ? this.#now : checkTime(now, "now");
  }

  #scopeEnded(scope: string | undefined): boolean {
    return scope !== undefined && this.#config.scopeEnded !== undefined && this.#config.scopeEnded(scope) === true;
  }

  #lapseOf(r: ClaimRecord, at: number): LapsedClaim["why"] | undefined {
    if (r.expiresAt !== undefined && at >= r.expiresAt) return "lease-lapsed";
    if (this.#scopeEnded(r.scope)) return "scope-ended";
    return undefined;
  }

  #holdsAt(r: ClaimRecord, at: number): boolean {
    return this.#lapseOf(r, at) === undefined;
  }

  // ── records ───────────────────────────────────────────────────────────

  #pushExpiry(at: number, seq: number): void {
    const h = this.#expiry;
    h.push([at, seq]);
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!earlier(h[i]!, h[p]!)) break;
      [h[i], h[p]] = [h[p]!, h[i]!];
      i = p;
    }
  }

  #popExpiry(): [number, number] | undefined {
    const h = this.#expiry;
    const top = h[0];
    const last = h.pop();
    if (top === undefined || last === undefined || h.length === 0) return top;
    h[0] = last;
    for (let i = 0; ; ) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && earlier(h[l]!, h[m]!)) m = l;
      if (r < h.length && earlier(h[r]!, h[m]!)) m = r;
      if (m === i) break;
      [h[i], h[m]] = [h[m]!, h[i]!];
      i = m;
    }
    return top;
  }

  /**
   * Replaces the expiry heap by one entry per leased record. Which entries are live depends only on the records, and
   * `purgeLapsedBefore` skips stale ones without counting them, so a rebuild changes no outcome: a decoded replica
   * (no stale entries) and one with many drop the same claims. A list sorted by (expiry, seq) is a valid min-heap.
   */
  #rebuildExpiry(): void {
    const h: [number, number][] = [];
    for (const r of this.#order.values()) if (r.expiresAt !== undefined) h.push([r.expiresAt, r.seq]);
    h.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    this.#expiry = h;
  }

  /** Rebuilds the heap once stale entries pass max(EXPIRY_INDEX_SLACK, #leased): amortised O(log n) per push. */
  #boundExpiry(): void {
    if (this.#expiry.length - this.#leased > Math.max(EXPIRY_INDEX_SLACK, this.#leased)) this.#rebuildExpiry();
  }

  #insert(r: ClaimRecord): void {
    this.#order.set(r.seq, r);
    if (r.expiresAt !== undefined) {
      this.#leased++;
      this.#pushExpiry(r.expiresAt, r.seq);
    }
    const onKey = this.#byKey.get(r.key);
    if (onKey === undefined) this.#byKey.set(r.key, [r]);
    else {
      // Stryker disable next-line ConditionalExpression,EqualityOperator,UpdateOperator: #emptyKeys only decides when #compact runs, and #compact only drops empty per-key lists, which every reader of #byKey treats like a missing key (memory only)
      if (onKey.length === 0) this.#emptyKeys--;
      onKey.push(r);
    }
    let mine = this.#byHolder.get(r.holder);
    if (mine === undefined) this.#byHolder.set(r.holder, (mine = new Map()));
    // Stryker disable next-line ConditionalExpression,StringLiteral: unreachable — take removes the holder's claim on each fresh key (keys distinct after trimming) before inserting, and decodeClaims refuses a holder recorded twice on a key
    if (mine.has(r.key)) throw new Error(`claims invariant broken: ${r.holder} recorded twice on ${r.key}`);
    mine.set(r.key, r);
    if (r.scope !== undefined) {
      let inScope = this.#byScope.get(r.scope);
      if (inScope === undefined) this.#byScope.set(r.scope, (inScope = new Set()));
      inScope.add(r);
    }
  }

  #remove(r: ClaimRecord): void {
    this.#order.delete(r.seq);
    if (r.expiresAt !== undefined) {
      this.#leased--; // its entry is stale now (or already popped by purgeLapsedBefore)
      this.#boundExpiry();
    }
    const onKey = this.#byKey.get(r.key);
    if (onKey !== undefined) {
      const i = onKey.indexOf(r);
      // Stryker disable next-line ConditionalExpression: #remove is called only on a recorded claim, and every recorded claim is in its key's list, so i >= 0 (this leaves the killed i > 0 / i < 0 counted)
      if (i >= 0) onKey.splice(i, 1);
      // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator,UpdateOperator,ArithmeticOperator: only when #compact runs (never, always, or after another count); #compact only drops empty per-key lists, which every reader of #byKey treats like a missing key (memory and cost only)
      if (onKey.length === 0 && ++this.#emptyKeys > 1024 && this.#emptyKeys > this.#byKey.size / 2) this.#compact();
    }
    const mine = this.#byHolder.get(r.holder);
    if (mine !== undefined) {
      mine.delete(r.key);
      if (mine.size === 0) this.#byHolder.delete(r.holder);
    }
    if (r.scope !== undefined) {
      const inScope = this.#byScope.get(r.scope);
      if (inScope !== undefined) {
        inScope.delete(r);
        if (inScope.size === 0) this.#byScope.delete(r.scope);
      }
    }
  }

  /** Drops the keys that no claim is recorded on; runs after as many releases as keys remain, so its cost is amortised. */
  #compact(): void {
    const kept = new Map<string, ClaimRecord[]>();
    for (const [key, list] of this.#byKey) if (list.length > 0) kept.set(key, list);
    this.#byKey = kept;
    this.#emptyKeys = 0;
  }

  #capacityOf(key: string): number | null {
    const cap = this.#config.capacity.get(key);
    return cap === undefined ? 1 : cap;
  }

  #liveOn(key: string, at: number): ClaimRecord[] {
    const onKey = this.#byKey.get(key);
    if (onKey === undefined) return [];
    return onKey.filter((r) => this.#holdsAt(r, at));
  }

  /** What a take of `request` at `at` would do: the resources that block it, those already held, those to grant. */
  #judge(request: TakeRequest, at: number): { blocked: Blocked[]; existing: Map<string, ClaimRecord>; fresh: { key: string; mode: ClaimMode }[] } {
    const { holder, scope } = request;
    const mine = this.#byHolder.get(holder);
    const blocked: Blocked[] = [];
    const existing = new Map<string, ClaimRecord>();
    const fresh: { key: string; mode: ClaimMode }[] = [];
    const roster = this.#config.rosterSet;
    for (const r of request.resources) {
      const key = claimKey(r.key);
      const capacity = this.#capacityOf(key);
      if (roster !== undefined && !roster.has(key)) {
        blocked.push({
          key,
          capacity,
          reason: "not-on-roster",
          holders: [],
          // Stryker disable next-line ArrayDeclaration: tableConfig (the only maker of a TableConfig) sets roster and rosterSet together, so the fallback is never used
          roster: this.#config.roster ?? [],
        });
        continue;
      }
      const own = mine?.get(key);
      if (own !== undefined && own.mode === r.mode && own.scope === scope && this.#holdsAt(own, at)) {
        existing.set(key, own);
        continue;
      }
      const others = this.#liveOn(key, at).filter((o) => o.holder !== holder);
      if (r.mode === "exclusive" ? others.length > 0 : others.some((o) => o.mode === "exclusive")) {
        blocked.push({ key, capacity, reason: "held", holders: others.map((o) => o.holder) });
      } else if (capacity !== null && others.length >= capacity) {
        blocked.push({ key, capacity, reason: "capacity", holders: others.map((o) => o.holder) });
      } else {
        fresh.push({ key, mode: r.mode });
      }
    }
    const max = this.#config.maxPerHolder;
    // Also for a take that adds no claim: with `fresh` empty the block below pushes nothing and leaves `blocked` in
    // request order, so a `fresh.length > 0` guard here would save only the count (a cost, not a result).
    if (max !== undefined) {
      let count = 0;
      if (mine !== undefined) for (const r of mine.values()) if (this.#holdsAt(r, at)) count++;
      for (const f of fresh) {
        const own = mine?.get(f.key);
        if (own === undefined || !this.#holdsAt(own, at)) count++;
      }
      if (count > max) {
        for (const f of fresh) {
          const own = mine?.get(f.key);
          if (own === undefined || !this.#holdsAt(own, at)) {
            blocked.push({ key: f.key, capacity: this.#capacityOf(f.key), reason: "per-holder-limit", holders: [] });
          }
        }
        const order = new Map(request.resources.map((r, i) => [claimKey(r.key), i]));
        blocked.sort((a, b) => (order.get(a.key) ?? 0) - (order.get(b.key) ?? 0));
      }
    }
    return { blocked, existing, fresh };
  }

  // ── mutators ──────────────────────────────────────────────────────────

  take(request: TakeRequest, now: number, token?: number): TakeOutcome {
    const at = this.#advance(checkTime(now, "now"));
    const problem = requestProblem(request);
    if (problem !== undefined) return { ok: false, blocked: [], invalid: problem };
    // a clock this far ahead is a caller's bug, but its expiry must still be encodable (the table is snapshotted)
    if (request.ttlMs !== undefined && !Number.isSafeInteger(at + request.ttlMs)) {
      return { ok: false, blocked: [], invalid: `the lease would end past the largest safe integer (now ${at} + ttlMs ${request.ttlMs})` };
    }
    if (token !== undefined && !(Number.isSafeInteger(token) && token > this.#lastToken)) {
      return { ok: false, blocked: [], invalid: `token must be a safe integer above ${this.#lastToken}, got ${String(token)}` };
    }
    if (this.#scopeEnded(request.scope)) {
      return { ok: false, blocked: [], invalid: `scope ${JSON.stringify(request.scope)} has ended` };
    }
    const { holder, scope } = request;
    const { blocked, existing, fresh } = this.#judge(request, at);
    if (blocked.length > 0) return { ok: false, blocked };

    const superseded: LapsedClaim[] = [];
    // Read only when something is granted fresh: a resource neither blocked nor existing is fresh.
    const grantToken = token ?? this.#lastToken + 1;
    if (fresh.length > 0) {
      this.#lastToken = grantToken;
      for (const f of fresh) {
        for (const old of [...(this.#byKey.get(f.key) ?? [])]) {
          const why = this.#lapseOf(old, at);
          if (why !== undefined) {
            superseded.push({ ...holdingOf(old), why });
            this.#remove(old);
          } else if (old.holder === holder) {
            this.#remove(old); // a change of mode or scope replaces the holder's claim
          }
        }
        this.#insert({
          seq: this.#seq++,
          key: f.key,
          holder,
          mode: f.mode,
          token: grantToken,
          since: at,
          ttlMs: request.ttlMs,
          expiresAt: request.ttlMs === undefined ? undefined : at + request.ttlMs,
          scope,
          label: request.label,
        });
      }
    }
    const grants: Grant[] = request.resources.map((r) => {
      const key = claimKey(r.key);
      const had = existing.get(key);
      return had !== undefined
        ? { key, mode: had.mode, token: had.token, existing: true }
        : { key, mode: r.mode, token: grantToken, existing: false };
    });
    return { ok: true, grants, superseded };
  }

  release(holder: string, key: string, now?: number, token?: number): boolean {
    const at = this.#advance(now);
    if (typeof key !== "string") return false; // a malformed log entry releases nothing
    const r = this.#byHolder.get(holder)?.get(claimKey(key));
    if (r === undefined) return false;
    // A release naming a grant ends that grant only: a late retry of a release that already ran must not end the
    // holder's newer grant of the same key (rule 7 applied to release). A token that is not a number matches nothing.
    if (token !== undefined && r.token !== token) return false;
    const held = this.#holdsAt(r, at);
    this.#remove(r);
    return held;
  }

  releaseAll(holder: string, now?: number): readonly string[] {
    const at = this.#advance(now);
    const mine = this.#byHolder.get(holder);
    if (mine === undefined) return [];
    return this.#removeAll([...mine.values()], at);
  }

  releaseScope(scope: string, now?: number): readonly string[] {
    const at = this.#advance(now);
    const inScope = this.#byScope.get(scope);
    if (inScope === undefined) return [];
    return this.#removeAll([...inScope], at);
  }

  #removeAll(records: ClaimRecord[], at: number): string[] {
    // Stryker disable next-line MethodExpression,ArithmeticOperator: a holder's Map and a scope's Set already iterate in seq order (#insert appends every record, with a fresh seq, and never re-sets an entry), so the sort moves nothing
    records.sort((a, b) => a.seq - b.seq);
    const released: string[] = [];
    for (const r of records) {
      if (this.#holdsAt(r, at)) released.push(r.key);
      this.#remove(r);
    }
    return released;
  }

  renew(holder: string, key: string, now: number): boolean {
    const at = this.#advance(checkTime(now, "now"));
    if (typeof key !== "string") return false;
    const r = this.#byHolder.get(holder)?.get(claimKey(key));
    if (r === undefined || !this.#holdsAt(r, at)) return false;
    // a renewal whose expiry would not be a safe integer (a clock near 2^53) is not made: the lease keeps its end
    if (r.ttlMs !== undefined && !Number.isSafeInteger(at + r.ttlMs)) return false;
    if (r.ttlMs !== undefined) {
      r.expiresAt = at + r.ttlMs;
      this.#pushExpiry(r.expiresAt, r.seq); // the entry for the old expiry is stale now
      this.#boundExpiry();
    }
    return true;
  }

  purge(now?: number): readonly LapsedClaim[] {
    const at = this.#advance(now);
    const gone = this.lapsed(at);
    for (const g of gone) {
      const r = this.#byHolder.get(g.holder)?.get(g.key);
      if (r !== undefined) this.#remove(r);
    }
    // purge already reads every record; dropping every stale expiry entry costs no more than that (sorting aside)
    if (this.#expiry.length > this.#leased) this.#rebuildExpiry();
    return gone;
  }

  purgeLapsedBefore(cutoff: number, max: number): readonly LapsedClaim[] {
    const until = checkTime(cutoff, "cutoff");
    if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`max must be a safe integer ≥ 0, got ${String(max)}`);
    const gone: LapsedClaim[] = [];
    // Which claims go depends only on the records: the first `max` by (expiry, order taken) — never on how many stale
    // entries the heap holds (a replica restored from a snapshot holds none), so stale pops are not counted against
    // `max`. Each entry is pushed once and popped at most once, so their cost is paid once, amortised over the pushes.
    while (gone.length < max) {
      const top = this.#expiry[0];
      if (top === undefined || top[0] > until) break;
      this.#popExpiry();
      const r = this.#order.get(top[1]);
      if (r === undefined || r.expiresAt !== top[0]) continue; // released, replaced or renewed since
      gone.push({ ...holdingOf(r), why: "lease-lapsed" });
      this.#remove(r);
    }
    return gone;
  }

  // ── reads ─────────────────────────────────────────────────────────────

  owner(key: string, now?: number): string | undefined {
    return this.#liveOn(claimKey(key), this.#readTime(now))[0]?.holder;
  }

  holders(key: string, now?: number): readonly string[] {
    return this.#liveOn(claimKey(key), this.#readTime(now)).map((r) => r.holder);
  }

  #spare(key: string, at: number): number | null {
    const live = this.#liveOn(key, at);
    if (live.some((r) => r.mode === "exclusive")) return 0;
    const cap = this.#capacityOf(key);
    return cap === null ? null : Math.max(0, cap - live.length);
  }

  free(now?: number): readonly string[] | undefined {
    const at = this.#readTime(now);
    const roster = this.#config.roster;
    if (roster === undefined) return undefined;
    return roster.filter((key) => {
      const spare = this.#spare(key, at);
      return spare === null || spare > 0;
    });
  }

  open(now?: number): readonly Holding[] {
    const at = this.#readTime(now);
    const out: Holding[] = [];
    for (const r of this.#order.values()) if (this.#holdsAt(r, at)) out.push(holdingOf(r));
    return out;
  }

  lapsed(now?: number): readonly LapsedClaim[] {
    const at = this.#readTime(now);
    const out: LapsedClaim[] = [];
    for (const r of this.#order.values()) {
      const why = this.#lapseOf(r, at);
      if (why !== undefined) out.push({ ...holdingOf(r), why });
    }
    return out;
  }

  availability(keys: readonly string[], now?: number): readonly Availability[] {
    const at = this.#readTime(now);
    return keys.map((raw) => {
      const key = claimKey(raw);
      const onRoster = this.#config.rosterSet === undefined || this.#config.rosterSet.has(key);
      return {
        key,
        capacity: this.#capacityOf(key),
        onRoster,
        holders: this.#liveOn(key, at).map(holdingOf),
        free: onRoster ? this.#spare(key, at) : 0,
      };
    });
  }

  wouldRefuse(request: TakeRequest, now?: number): TakeRefused | undefined {
    const at = now === undefined ? this.#now : Math.max(this.#now, checkTime(now, "now"));
    if (requestProblem(request) !== undefined || this.#scopeEnded(request.scope)) return undefined;
    const { blocked } = this.#judge(request, at);
    return blocked.length > 0 ? { ok: false, blocked } : undefined;
  }

  checkFence(key: string, token: number, now?: number): boolean {
    const at = this.#readTime(now);
    return this.#liveOn(claimKey(key), at).some((r) => r.token === token);
  }

  // ── encoding ──────────────────────────────────────────────────────────

  encode(): string {
    const c = this.#config;
    const doc: Record<string, unknown> = { format: CLAIMS_FORMAT };
    // An absent roster or maxPerHolder is undefined here, which JSON.stringify leaves out (and keeps the key order).
    doc["roster"] = c.roster;
    if (c.capacity.size > 0) {
      doc["capacity"] = [...c.capacity].sort((a, b) => compareCodeUnits(a[0], b[0]));
    }
    doc["maxPerHolder"] = c.maxPerHolder;
    doc["now"] = this.#now;
    doc["lastToken"] = this.#lastToken;
    if (this.#order.size > 0) {
      doc["claims"] = [...this.#order.values()].map((r) => [
        r.key,
        r.holder,
        r.mode,
        r.token,
        r.since,
        r.ttlMs ?? null,
        r.expiresAt ?? null,
        r.scope ?? null,
        r.label ?? null,
      ]);
    }
    return JSON.stringify(doc);
  }
}

/**
 * A fresh, empty claims table (claims.md §2) for one process with many members.
 * Throws `RangeError` on malformed options (a roster key listed twice, a capacity
 * for a key off the roster, a capacity or `maxPerHolder` below 1).
 */
export function createClaims(options?: ClaimsOptions): ClaimsTable {
  return new Table(tableConfig(options));
}

/**
 * How many entries a table's expiry index holds, stale ones included: a read-only diagnostic for tests (not exported
 * from the package). `undefined` for a table this module did not make.
 */
export function expiryIndexSize(table: ClaimsTable): number | undefined {
  return table instanceof Table ? table.expiryEntries : undefined;
}

/** Builds a table from validated parts; used by `decodeClaims` only. */
export function restoreClaims(
  config: TableConfig,
  now: number,
  lastToken: number,
  records: readonly Omit<ClaimRecord, "seq">[],
): ClaimsTable {
  const table = new Table(config);
  table.restore(now, lastToken, records);
  return table;
}
