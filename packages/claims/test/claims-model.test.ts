// Model-based test of the claims table (claims.md §5): random command sequences run
// against the real table and a flat, linear-scan reference model side by side.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { createClaims, decodeClaims } from "../src/index.ts";
import type { ClaimMode, ClaimsTable, Holding, TakeOutcome } from "../src/index.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 1000);

const KEYS = ["k0", "k1", "k2", "k3", " k0 ", "zz"] as const; // " k0 " trims to k0; zz is off the roster
const HOLDERS = ["h0", "h1", "h2", "h3"] as const;
const SCOPES = ["s0", "s1"] as const;

interface Config {
  roster: boolean;
  caps: Record<string, number | null>;
  maxPerHolder: number | undefined;
}

type Op =
  | {
      t: "take";
      holder: string;
      resources: { key: string; mode: ClaimMode }[];
      scope: string | undefined;
      ttl: number | undefined;
      back: number; // take at now − back: time must not run backwards
      token: "auto" | "fresh" | "stale";
    }
  | { t: "release"; holder: string; key: string; token: "none" | "current" | "other" }
  | { t: "releaseAll"; holder: string }
  | { t: "releaseScope"; scope: string }
  | { t: "renew"; holder: string; key: string }
  | { t: "advance"; dt: number }
  | { t: "endScope"; scope: string }
  | { t: "purge" };

// ── reference model ─────────────────────────────────────────────────────
interface MClaim {
  seq: number;
  key: string;
  holder: string;
  mode: ClaimMode;
  token: number;
  since: number;
  scope: string | undefined;
  ttl: number | undefined;
  exp: number | undefined;
}

class Model {
  claims: MClaim[] = [];
  now = 0;
  lastToken = 0;
  seq = 0;
  readonly ended = new Set<string>();
  readonly config: Config;
  constructor(config: Config) {
    this.config = config;
  }

  cap(key: string): number | null {
    return key in this.config.caps ? (this.config.caps[key] ?? null) : 1;
  }
  live(c: MClaim, t = this.now): boolean {
    return (c.exp === undefined || t < c.exp) && !(c.scope !== undefined && this.ended.has(c.scope));
  }
  advance(t: number): number {
    this.now = Math.max(this.now, t);
    return this.now;
  }
  onRoster(key: string): boolean {
    return !this.config.roster || ["k0", "k1", "k2", "k3"].includes(key);
  }

  take(op: Extract<Op, { t: "take" }>, now: number, token: number | undefined) {
    this.advance(now);
    const keys = op.resources.map((r) => r.key.trim());
    if (new Set(keys).size !== keys.length) return { invalid: true as const };
    if (token !== undefined && token <= this.lastToken) return { invalid: true as const };
    if (op.scope !== undefined && this.ended.has(op.scope)) return { invalid: true as const };
    const blocked: { key: string; reason: string; holders: string[] }[] = [];
    const fresh: { key: string; mode: ClaimMode }[] = [];
    const existing = new Map<string, MClaim>();
    for (const r of op.resources) {
      const key = r.key.trim();
      if (!this.onRoster(key)) {
        blocked.push({ key, reason: "not-on-roster", holders: [] });
        continue;
      }
      const own = this.claims.find((c) => c.key === key && c.holder === op.holder);
      if (own && own.mode === r.mode && own.scope === op.scope && this.live(own)) {
        existing.set(key, own);
        continue;
      }
      const others = this.claims.filter((c) => c.key === key && c.holder !== op.holder && this.live(c));
      const cap = this.cap(key);
      if (r.mode === "exclusive" ? others.length > 0 : others.some((c) => c.mode === "exclusive")) {
        blocked.push({ key, reason: "held", holders: others.map((c) => c.holder) });
      } else if (cap !== null && others.length >= cap) {
        blocked.push({ key, reason: "capacity", holders: others.map((c) => c.holder) });
      } else fresh.push({ key, mode: r.mode });
    }
    const max = this.config.maxPerHolder;
    if (max !== undefined && fresh.length > 0) {
      const mine = new Set(this.claims.filter((c) => c.holder === op.holder && this.live(c)).map((c) => c.key));
      const after = new Set([...mine, ...fresh.map((f) => f.key)]);
      if (after.size > max) {
        for (const f of fresh) if (!mine.has(f.key)) blocked.push({ key: f.key, reason: "per-holder-limit", holders: [] });
        blocked.sort((a, b) => keys.indexOf(a.key) - keys.indexOf(b.key));
      }
    }
    if (blocked.length > 0) return { ok: false as const, blocked };
    let tok = 0;
    if (fresh.length > 0) {
      tok = token ?? this.lastToken + 1;
      this.lastToken = tok;
      for (const f of fresh) {
        this.claims = this.claims.filter((c) => !(c.key === f.key && (!this.live(c) || c.holder === op.holder)));
        this.claims.push({
          seq: this.seq++,
          key: f.key,
          holder: op.holder,
          mode: f.mode,
          token: tok,
          since: this.now,
          scope: op.scope,
          ttl: op.ttl,
          exp: op.ttl === undefined ? undefined : this.now + op.ttl,
        });
      }
    }
    return {
      ok: true as const,
      grants: op.resources.map((r) => {
        const key = r.key.trim();
        const had = existing.get(key);
        return had ? { key, mode: had.mode, token: had.token, existing: true } : { key, mode: r.mode, token: tok, existing: false };
      }),
    };
  }

  release(holder: string, key: string, token: number | undefined): boolean {
    const c = this.claims.find((x) => x.holder === holder && x.key === key.trim());
    if (!c) return false;
    if (token !== undefined && c.token !== token) return false;
    this.claims = this.claims.filter((x) => x !== c);
    return this.live(c);
  }
  releaseWhere(pred: (c: MClaim) => boolean): string[] {
    const gone = this.claims.filter(pred);
    this.claims = this.claims.filter((c) => !pred(c));
    return gone.filter((c) => this.live(c)).map((c) => c.key);
  }
  renew(holder: string, key: string, now: number): boolean {
    this.advance(now);
    const c = this.claims.find((x) => x.holder === holder && x.key === key.trim());
    if (!c || !this.live(c)) return false;
    if (c.ttl !== undefined) c.exp = this.now + c.ttl;
    return true;
  }
  open() {
    return this.claims.filter((c) => this.live(c)).map((c) => view(c));
  }
  lapsed() {
    return this.claims.filter((c) => !this.live(c)).map((c) => view(c));
  }
}

function view(c: { key: string; holder: string; mode: ClaimMode; token: number; since: number; scope?: string | undefined; exp?: number | undefined; expiresAt?: number | undefined }) {
  return { key: c.key, holder: c.holder, mode: c.mode, token: c.token, since: c.since, scope: c.scope, exp: c.exp ?? c.expiresAt };
}

function realView(h: Holding) {
  return view(h);
}

// ── generators ──────────────────────────────────────────────────────────
const config: fc.Arbitrary<Config> = fc.record({
  roster: fc.boolean(),
  caps: fc.record({ k1: fc.constantFrom<number | null>(1, 2, 3, null), k2: fc.constantFrom<number | null>(2, null) }),
  maxPerHolder: fc.constantFrom(undefined, 1, 2, 3),
});

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      t: fc.constant("take" as const),
      holder: fc.constantFrom(...HOLDERS),
      resources: fc.array(fc.record({ key: fc.constantFrom(...KEYS), mode: fc.constantFrom<ClaimMode>("exclusive", "shared") }), {
        minLength: 1,
        maxLength: 3,
      }),
      scope: fc.constantFrom(undefined, ...SCOPES),
      ttl: fc.constantFrom(undefined, 5, 20, 60),
      back: fc.constantFrom(0, 0, 0, 7),
      token: fc.constantFrom("auto" as const, "auto" as const, "fresh" as const, "stale" as const),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      t: fc.constant("release" as const),
      holder: fc.constantFrom(...HOLDERS),
      key: fc.constantFrom(...KEYS),
      token: fc.constantFrom("none" as const, "current" as const, "other" as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("releaseAll" as const), holder: fc.constantFrom(...HOLDERS) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("releaseScope" as const), scope: fc.constantFrom(...SCOPES) }) },
  { weight: 2, arbitrary: fc.record({ t: fc.constant("renew" as const), holder: fc.constantFrom(...HOLDERS), key: fc.constantFrom(...KEYS) }) },
  { weight: 3, arbitrary: fc.record({ t: fc.constant("advance" as const), dt: fc.integer({ min: 0, max: 30 }) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("endScope" as const), scope: fc.constantFrom(...SCOPES) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant("purge" as const) }) },
);

// ── invariants that hold whatever the model says ────────────────────────
function checkInvariants(table: ClaimsTable, cfg: Config, ended: ReadonlySet<string>): void {
  const open = table.open();
  const byKey = new Map<string, Holding[]>();
  for (const h of open) {
    // released, lapsed and scope-ended claims hold nothing
    if (h.expiresAt !== undefined) expect(table.now).toBeLessThan(h.expiresAt);
    if (h.scope !== undefined) expect(ended.has(h.scope)).toBe(false);
    byKey.set(h.key, [...(byKey.get(h.key) ?? []), h]);
  }
  for (const [key, hs] of byKey) {
    const cap = key in cfg.caps ? (cfg.caps[key] ?? null) : 1;
    if (cap !== null) expect(hs.length).toBeLessThanOrEqual(cap); // never more holders than capacity
    if (hs.some((h) => h.mode === "exclusive")) expect(hs.length).toBe(1); // never an exclusive beside another
    expect(new Set(hs.map((h) => h.holder)).size).toBe(hs.length);
  }
  if (cfg.maxPerHolder !== undefined) {
    const per = new Map<string, number>();
    for (const h of open) per.set(h.holder, (per.get(h.holder) ?? 0) + 1);
    for (const n of per.values()) expect(n).toBeLessThanOrEqual(cfg.maxPerHolder);
  }
}

function runSequence(cfg: Config, ops: readonly Op[]): void {
  const ended = new Set<string>();
  const table = createClaims({
    ...(cfg.roster ? { roster: ["k0", "k1", "k2", "k3"] } : {}),
    capacity: cfg.caps,
    ...(cfg.maxPerHolder !== undefined ? { maxPerHolder: cfg.maxPerHolder } : {}),
    scopeEnded: (s) => ended.has(s),
  });
  const model = new Model(cfg);
  let clock = 0;
  const lastTokenOf = new Map<string, number>();
  for (const o of ops) {
    switch (o.t) {
      case "take": {
        const at = Math.max(0, clock - o.back);
        const token = o.token === "auto" ? undefined : o.token === "fresh" ? table.lastToken + 3 : table.lastToken;
        const judgedAt = Math.max(table.now, at);
        const before = { open: table.open(judgedAt), lapsed: table.lapsed(judgedAt), last: table.lastToken };
        const request = { holder: o.holder, resources: o.resources, ...(o.scope ? { scope: o.scope } : {}), ...(o.ttl ? { ttlMs: o.ttl } : {}) };
        const predicted = table.wouldRefuse(request, at);
        const got: TakeOutcome = table.take(request, at, token);
        const want = model.take(o, at, token);
        // the read-only judgement answers exactly the refusal the take gives (blocked, not malformed); a stale
        // token is the take's own invalid answer, which the judgement leaves to the take
        if (predicted !== undefined && o.token !== "stale") expect(got).toEqual(predicted);
        else if (!got.ok) expect(got.invalid).toBeDefined();
        if ("invalid" in want) {
          expect(got.ok).toBe(false);
          expect(!got.ok && got.invalid !== undefined).toBe(true);
        } else if (!want.ok) {
          expect(got.ok).toBe(false);
          if (!got.ok) {
            expect(got.invalid).toBeUndefined();
            expect(got.blocked.map((b) => ({ key: b.key, reason: b.reason, holders: [...b.holders] }))).toEqual(want.blocked);
          }
        } else {
          expect(got.ok).toBe(true);
          if (got.ok) expect(got.grants).toEqual(want.grants);
        }
        if (!got.ok) {
          // all or nothing: a refused take changes nothing
          expect(table.open()).toEqual(before.open);
          expect(table.lapsed()).toEqual(before.lapsed);
          expect(table.lastToken).toBe(before.last);
        } else {
          for (const g of got.grants) {
            if (g.existing) continue;
            // tokens strictly increase per key
            expect(g.token).toBeGreaterThan(lastTokenOf.get(g.key) ?? 0);
            lastTokenOf.set(g.key, g.token);
            expect(table.checkFence(g.key, g.token)).toBe(true);
          }
        }
        break;
      }
      case "release": {
        // "current": the token of the holder's recorded claim on the key; "other": one it does not carry (the
        // token of the key's latest grant to anyone else, or one never granted)
        const key = o.key.trim();
        const mine = model.claims.find((c) => c.holder === o.holder && c.key === key)?.token;
        const others = model.claims.filter((c) => c.key === key && c.token !== mine).map((c) => c.token);
        const token = o.token === "none" ? undefined : o.token === "current" ? (mine ?? model.lastToken + 1) : (others.at(-1) ?? model.lastToken + 1);
        const before = table.open();
        expect(table.release(o.holder, o.key, undefined, token)).toBe(model.release(o.holder, o.key, token));
        if (token === undefined || token === mine) expect(table.holders(o.key)).not.toContain(o.holder);
        else {
          // a release with a token never ends a grant carrying another token: nothing held before is gone
          expect(table.open()).toEqual(before);
          for (const h of before) expect(table.checkFence(h.key, h.token)).toBe(true);
        }
        break;
      }
      case "releaseAll":
        expect(table.releaseAll(o.holder)).toEqual(model.releaseWhere((c) => c.holder === o.holder));
        expect(table.open().filter((h) => h.holder === o.holder)).toEqual([]);
        break;
      case "releaseScope":
        expect(table.releaseScope(o.scope)).toEqual(model.releaseWhere((c) => c.scope === o.scope));
        expect(table.open().filter((h) => h.scope === o.scope)).toEqual([]);
        break;
      case "renew":
        expect(table.renew(o.holder, o.key, clock)).toBe(model.renew(o.holder, o.key, clock));
        break;
      case "advance":
        clock += o.dt;
        break;
      case "endScope":
        ended.add(o.scope);
        model.ended.add(o.scope);
        break;
      case "purge":
        model.advance(clock);
        expect(table.purge(clock).map(realView)).toEqual(model.lapsed());
        model.claims = model.claims.filter((c) => model.live(c));
        break;
    }
    // reads agree with the model at the model's time and at the current clock
    model.advance(model.now);
    expect(table.now).toBe(model.now);
    expect(table.lastToken).toBe(model.lastToken);
    expect(table.open().map(realView)).toEqual(model.open());
    expect(table.lapsed().map(realView)).toEqual(model.lapsed());
    const readAt = Math.max(clock, model.now);
    const liveLater = model.claims.filter((c) => model.live(c, readAt)).map(view);
    expect(table.open(readAt).map(realView)).toEqual(liveLater);
    for (const k of ["k0", "k1", "k2", "k3"]) {
      const hs = model.claims.filter((c) => c.key === k && model.live(c)).map((c) => c.holder);
      expect(table.holders(k)).toEqual(hs);
      expect(table.owner(k)).toBe(hs[0]);
      const [a] = table.availability([k]);
      const live = model.claims.filter((c) => c.key === k && model.live(c));
      const cap = model.cap(k);
      expect(a?.free).toBe(live.some((c) => c.mode === "exclusive") ? 0 : cap === null ? null : cap - live.length);
      // fencing: the token of a claim that holds nothing is stale
      for (const c of model.claims.filter((c) => c.key === k)) {
        expect(table.checkFence(k, c.token)).toBe(live.some((l) => l.token === c.token));
      }
    }
    if (cfg.roster) {
      expect(table.free()).toEqual(
        ["k0", "k1", "k2", "k3"].filter((k) => {
          const live = model.claims.filter((c) => c.key === k && model.live(c));
          const cap = model.cap(k);
          return !live.some((c) => c.mode === "exclusive") && (cap === null || live.length < cap);
        }),
      );
    } else expect(table.free()).toBeUndefined();
    checkInvariants(table, cfg, ended);
    // the canonical encoding round-trips exactly
    const text = table.encode();
    expect(decodeClaims(text, { scopeEnded: (s) => ended.has(s) }).encode()).toBe(text);
  }
}

describe("ClaimsTable against a reference model", () => {
  it(`agrees with the model over ${RUNS} random command sequences`, () => {
    fc.assert(
      fc.property(config, fc.array(op, { minLength: 1, maxLength: 40 }), (cfg, ops) => {
        runSequence(cfg, ops);
      }),
      { numRuns: RUNS },
    );
  });
});
