/**
 * A reference model of the control state machine (governed.md §3.3–3.4, §3.8, §3.10), written apart from
 * `ControlState` and as plainly as possible: plain maps, the decision table read top to bottom, no projection
 * ledger, no snapshot. The tests fold the same committed log into both and require the same outcome at every index
 * (§5.2 "Control linearizability (a)", §5.4 C14). Retention of `idem:` clients is a full scan after every index:
 * keep an outcome while its index is among the last `window` applied, and an `idem:` session while it keeps one.
 */
import { createHash } from "node:crypto";
import { createClaims } from "@heddle/claims";
import type { ClaimsOptions, ClaimsTable } from "@heddle/claims";
import type { AttachmentRecord } from "@heddle/ledger";
import { decodeEntry, digestOf, LAPSED_CLAIM_RETENTION_MS, LAPSED_CLAIMS_PER_APPLY } from "../../src/index.ts";
import type { ControlCommand, ControlOutcome, LogEntry, ProposalKey } from "../../src/index.ts";

const RANK = { PREPARED: 0, ACTIVE: 1, CLOSING: 2, RETIRED: 3 } as const;
type Lc = keyof typeof RANK;
const INT64_MAX = (1n << 63n) - 1n;

/** The model's state: what `ControlState` holds, minus the projection ledger. */
export class ControlModel {
  readonly root: string;
  applied = 0;
  readonly records = new Map<string, AttachmentRecord>();
  readonly lc = new Map<string, Lc>();
  readonly mints = new Map<string, { holder: string; amount: bigint }>();
  total = 0n;
  readonly enrolled = new Set<string>();
  readonly transitions: { index: number; replica: string; enrolled: boolean }[] = [];
  readonly sessions = new Map<string, { floor: number; out: Map<number, { digest: string; outcome: ControlOutcome }> }>();
  readonly claims: ClaimsTable;
  claimsNow = 0;

  readonly window: number;

  constructor(root: string, claims: ClaimsOptions = {}, window = Infinity) {
    this.root = root;
    this.claims = createClaims(claims);
    this.window = window;
  }

  /** The `idem:` sessions held now, with the seqs of their outcomes. */
  idemSessions(): Map<string, number[]> {
    return new Map([...this.sessions].filter(([c]) => c.startsWith("idem:")).map(([c, s]) => [c, [...s.out.keys()].sort((a, b) => a - b)]));
  }

  #forget(): void {
    for (const [client, s] of [...this.sessions]) {
      if (!client.startsWith("idem:")) continue;
      for (const [seq, r] of [...s.out]) if (r.outcome.index! <= this.applied - this.window) s.out.delete(seq);
      if (s.out.size === 0) this.sessions.delete(client);
    }
  }

  live(child: string): string[] {
    return [...this.records.values()]
      .filter((r) => r.child === child && (this.lc.get(r.id) === "ACTIVE" || this.lc.get(r.id) === "CLOSING"))
      .map((r) => r.id as string)
      .sort();
  }

  /** Folds one committed application entry; returns the outcome of a keyed control entry, else null. */
  applyEntry(e: LogEntry): ControlOutcome | null {
    const out = this.#entry(e);
    this.#forget();
    return out;
  }

  #entry(e: LogEntry): ControlOutcome | null {
    if (e.index !== this.applied + 1) throw new Error(`model: entry ${e.index} after ${this.applied}`);
    this.applied = e.index;
    const d = decodeEntry(e.command);
    if (d.kind === "foreign") return null;
    if (d.kind === "malformed") throw new Error(`model: malformed entry at ${e.index}: ${d.why}`);
    const env = d.envelope;
    if (env.key === null) return null;
    const key = env.key;
    let s = this.sessions.get(key.client);
    if (s === undefined) this.sessions.set(key.client, (s = { floor: 0, out: new Map() }));
    s.floor = Math.max(s.floor, env.ackFloor);
    for (const seq of [...s.out.keys()]) if (seq < s.floor) s.out.delete(seq);
    const index = e.index;
    if (key.seq < s.floor) return { kind: "conflict", index, key, conflict: { reason: "stale", key } };
    const digest = digestOf(env.cmd);
    const prior = s.out.get(key.seq);
    if (prior !== undefined) return prior.digest === digest ? prior.outcome : { kind: "conflict", index, key, conflict: { reason: "keyReuse", key } };
    const outcome = this.decide(env.cmd, env.proposer, key, index, e.stampedAt);
    s.out.set(key.seq, { digest, outcome });
    return outcome;
  }

  /** Folds an internal entry (no-op or configuration). */
  applyInternal(index: number): void {
    if (index !== this.applied + 1) throw new Error(`model: internal ${index} after ${this.applied}`);
    this.applied = index;
    this.#forget();
  }

  decide(cmd: ControlCommand, proposer: string, key: ProposalKey, index: number, stampedAt: number): ControlOutcome {
    const ok = (noop = false, extra: object = {}): ControlOutcome => ({ kind: "applied", index, key, noop, ...extra }) as ControlOutcome;
    const no = (conflict: object): ControlOutcome => ({ kind: "conflict", index, key, conflict }) as ControlOutcome;
    switch (cmd.op) {
      case "mint": {
        // governed's mintIdOf: the plain id while it fits the 256-unit wire limit, else a hash of the client
        const plain = `mint:${key.client}:${key.seq}`;
        const id = plain.length <= 256 ? plain : `mint:h:${createHash("sha256").update(key.client, "utf8").digest("hex").slice(0, 32)}:${key.seq}`;
        const had = this.mints.get(id);
        if (had) return had.holder === cmd.holder && had.amount === cmd.amount ? ok(true, { mintId: id }) : no({ reason: "keyReuse", key });
        if (this.total + cmd.amount > INT64_MAX) return no({ reason: "overflow", what: "mintedTotal" });
        this.mints.set(id, { holder: cmd.holder, amount: cmd.amount });
        this.total += cmd.amount;
        return ok(false, { mintId: id });
      }
      case "prepare": {
        const r = cmd.record;
        if (r.parent === r.child) return no({ reason: "invalidRecord", edge: r.id, detail: "selfLoop" });
        if (r.child === this.root) return no({ reason: "invalidRecord", edge: r.id, detail: "rootAsChild" });
        const old = this.records.get(r.id);
        if (old) {
          const same = old.parent === r.parent && old.child === r.child && old.weight.num === r.weight.num && old.weight.den === r.weight.den;
          return same ? ok(true) : no({ reason: "recordMismatch", edge: r.id, existing: old, proposed: r });
        }
        this.records.set(r.id, r);
        this.lc.set(r.id, "PREPARED");
        return ok();
      }
      case "activate": {
        const r = this.records.get(cmd.edge);
        if (!r) return no({ reason: "unknownEdge", edge: cmd.edge });
        const cur = this.lc.get(cmd.edge)!;
        if (RANK[cur] >= RANK.CLOSING) return no({ reason: "lifecycleRegression", edge: cmd.edge, current: cur, requested: "ACTIVE" });
        const other = this.live(r.child).filter((x) => x !== cmd.edge);
        if (other.length > 0) return no({ reason: "dualInbound", child: r.child, incumbent: other[0], rejected: cmd.edge });
        const path: string[] = [];
        for (let at: string = r.parent; ; ) {
          if (at === r.child) return no({ reason: "wouldCycle", edge: cmd.edge, path });
          const up = this.live(at);
          if (up.length === 0) break;
          path.push(up[0]!);
          at = this.records.get(up[0]!)!.parent;
        }
        if (cur === "ACTIVE") return ok(true);
        this.lc.set(cmd.edge, "ACTIVE");
        return ok();
      }
      case "close": {
        if (!this.records.has(cmd.edge)) return no({ reason: "unknownEdge", edge: cmd.edge });
        const cur = this.lc.get(cmd.edge)!;
        if (cur === "RETIRED") return no({ reason: "lifecycleRegression", edge: cmd.edge, current: cur, requested: "CLOSING" });
        if (cur === "PREPARED") return no({ reason: "notActive", edge: cmd.edge, current: cur });
        if (cur === "CLOSING") return ok(true);
        this.lc.set(cmd.edge, "CLOSING");
        return ok();
      }
      case "retire": {
        if (!this.records.has(cmd.edge)) return no({ reason: "unknownEdge", edge: cmd.edge });
        const cur = this.lc.get(cmd.edge)!;
        if (cur === "RETIRED") return ok(true);
        if (cur === "ACTIVE") return no({ reason: "notClosing", edge: cmd.edge, current: cur });
        this.lc.set(cmd.edge, "RETIRED");
        return ok();
      }
      case "enroll": {
        if (this.enrolled.has(cmd.replica)) return ok(true);
        this.enrolled.add(cmd.replica);
        this.transitions.push({ index, replica: cmd.replica, enrolled: true });
        return ok();
      }
      case "depart": {
        if (proposer !== cmd.replica) return no({ reason: "notSelf", replica: cmd.replica, proposer });
        if (!this.enrolled.has(cmd.replica)) return ok(true);
        this.enrolled.delete(cmd.replica);
        this.transitions.push({ index, replica: cmd.replica, enrolled: false });
        return ok();
      }
      case "barrier":
        throw new Error("model: a keyed barrier");
      default: {
        const now = Math.max(this.claimsNow, Math.floor(stampedAt));
        this.claimsNow = now;
        const t = this.claims;
        const answer = ((): ControlOutcome => {
          if (cmd.op === "claims.release" && cmd.token !== undefined) {
            if (t.release(cmd.holder, cmd.key, now, cmd.token)) return ok(false, { claims: true });
            // what the holder holds on the key now, read from the whole held list (the state reads one key's holders)
            const held = t.open(now).find((h) => h.holder === cmd.holder && h.key === cmd.key.trim());
            return ok(false, { claims: false, heldToken: held === undefined ? null : held.token });
          }
          const claims =
            cmd.op === "claims.take"
              ? t.take(cmd.request, now, index)
              : cmd.op === "claims.release"
                ? t.release(cmd.holder, cmd.key, now)
                : cmd.op === "claims.renew"
                  ? t.renew(cmd.holder, cmd.key, now)
                  : cmd.op === "claims.releaseAll"
                    ? t.releaseAll(cmd.holder, now)
                    : t.releaseScope(cmd.scope, now);
          return ok(false, { claims });
        })();
        // then the claims whose lease ended more than the retention ago go: the earliest expiry first (order taken
        // among equals), at most LAPSED_CLAIMS_PER_APPLY — read off the whole lapsed list, not the table's index
        const cutoff = Math.max(0, now - LAPSED_CLAIM_RETENTION_MS);
        const lapsed = t.lapsed(cutoff).filter((c) => c.why === "lease-lapsed");
        const byExpiry = lapsed.map((c, i) => ({ c, i })).sort((a, b) => (a.c.expiresAt ?? 0) - (b.c.expiresAt ?? 0) || a.i - b.i);
        for (const { c } of byExpiry.slice(0, LAPSED_CLAIMS_PER_APPLY)) t.release(c.holder, c.key, now);
        return answer;
      }
    }
  }

  /** The model's answer to `enrolledAt(i)`. */
  enrolledAt(i: number): string[] {
    const s = new Set<string>();
    for (const t of this.transitions) {
      if (t.index > i) break;
      if (t.enrolled) s.add(t.replica);
      else s.delete(t.replica);
    }
    return [...s].sort();
  }
}
