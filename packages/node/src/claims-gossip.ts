// Keeper and advisory claims on the network (claims.md §3–4, node.md §3.2 channel 5). The decisions are the
// pure functions of @heddle/claims (keeperState, renewKeeper, claimAdvisory, advisoryHolders, …); this file is
// the shell around them: it owns the claims channel, validates and counts inbound frames, sends this peer's
// own slots on change (coalesced) and periodically (anti-entropy), renews open keeper claims and observes
// every configured part so settling is measured on real (injected) time.
import {
  advisoryHolder,
  advisoryHolders,
  CLAIM_GUARANTEES,
  claimAdvisory,
  ClaimsDecodeError,
  closeKeeper,
  closeKeeperClaim,
  decodeAdvisorySlot,
  decodeKeeperSlot,
  dropAdvisory,
  duplicates,
  emptySlots,
  encodeAdvisorySlot,
  encodeKeeperSlot,
  keeperState,
  lookKeeper,
  MAX_SLOT_TEXT,
  next,
  nextUnclaimed,
  putAdvisorySlot,
  putKeeperSlot,
  receiveKeeperSlot,
  renewKeeper,
  writeKeeperClaim,
} from "@heddle/claims";
import type {
  AdvisoryClaim,
  AdvisoryDuplicate,
  AdvisorySlot,
  AdvisorySlots,
  KeeperClaim,
  KeeperRenewal,
  KeeperRule,
  KeeperSlot,
  KeeperSlots,
  KeeperState,
  KeeperView,
} from "@heddle/claims";
import type { PeerId, Seam, Timers } from "@heddle/seam";
import { sortedIds } from "@heddle/seam";
import type { RejectionCounter } from "./rejection.ts";
import { exactKeys, literalField, readEnvelope, readSchema, schemaRequire, textField, type WireRead } from "./wire-schema.ts";

/**
 * `state` with this peer's own keeper slot as persisted before a restart: a later renewal continues each claim
 * (`claimedAt`, `takenAt` kept; a closed one reopens keeping `takenAt`) under the new epoch's higher versions. Text
 * that does not decode, or is another peer's slot, is ignored: the peer then starts without claims, as before.
 */
function restoreOwnKeeperSlot(state: KeeperState, text: string): KeeperState {
  let slot: KeeperSlot;
  try {
    slot = decodeKeeperSlot(text);
  } catch (e) {
    if (e instanceof ClaimsDecodeError) return state;
    throw e;
  }
  if (slot.peer !== state.self) return state;
  // kept verbatim (the peers hold this very version: a changed copy under it would make them disagree); an open claim
  // on a part no longer configured is closed by the constructor right after (closeUnconfiguredAtBoot)
  return { ...state, slots: new Map(state.slots).set(state.self, slot) };
}

/**
 * `state` with this peer's open claim `claim`, on a part no longer configured (so with no keeper rule to observe it
 * by), closed at `now`: written into the own slot under the next version; the views of configured parts are unchanged.
 */
function closeUnconfigured(state: KeeperState, claim: KeeperClaim, now: number): KeeperState {
  const slot = writeKeeperClaim(state.slots.get(state.self), closeKeeperClaim(claim, now, claim.wroteUpTo), state.epoch);
  return { ...state, slots: putKeeperSlot(state.slots, slot).slots };
}

/** The two gossiped modes; each peer has at most one slot of each. */
export type GossipMode = "keeper" | "advisory";

import type { ClaimsGossipConfig } from "./claims-gossip-config.ts";
export type { ClaimsGossipConfig } from "./claims-gossip-config.ts";
export { CLAIMS_GOSSIP_DEFAULTS, resolveClaimsGossipConfig } from "./claims-gossip-config.ts";

/** One claims frame: a peer's own keeper or advisory slot, its text in the claims package's canonical encoding. */
export interface ClaimsFrame {
  readonly kind: GossipMode;
  readonly slot: KeeperSlot | AdvisorySlot;
}

const encoder = new TextEncoder();

/** The bytes of a claims frame: `{"v":1,"kind":"keeper"|"advisory","slot":"<slot text>"}`. */
export function encodeClaimsFrame(kind: "keeper", slot: KeeperSlot): Uint8Array;
export function encodeClaimsFrame(kind: "advisory", slot: AdvisorySlot): Uint8Array;
export function encodeClaimsFrame(kind: GossipMode, slot: KeeperSlot | AdvisorySlot): Uint8Array {
  const text = kind === "keeper" ? encodeKeeperSlot(slot as KeeperSlot) : encodeAdvisorySlot(slot as AdvisorySlot);
  return encoder.encode(JSON.stringify({ v: 1, kind, slot: text }));
}

/**
 * Reads a claims frame (node.md §4.3 order): envelope (`decode`, `bad-version`, `schema`), fields (`schema`),
 * the slot by the claims package's decoder (`too-many-entries` past `maxClaimsPerSlot`, `oversize` past its text
 * limit, `bad-value` for anything else it refuses), then authorship (`not-author`: only a slot's author sends it).
 */
export function readClaimsFrame(frame: Uint8Array, from: PeerId, maxClaimsPerSlot: number): WireRead<ClaimsFrame> {
  const env = readEnvelope(frame);
  if (!env.ok) return env;
  const o = env.message;
  const r = readSchema(() => {
    exactKeys(o, ["v", "kind", "slot"]);
    const kind = literalField(o.kind, ["keeper", "advisory"] as const);
    const text = textField(o.slot);
    schemaRequire(text.length > 0);
    return { kind, text };
  });
  if (!r.ok) return r;
  let slot: KeeperSlot | AdvisorySlot;
  try {
    slot = r.message.kind === "keeper" ? decodeKeeperSlot(r.message.text) : decodeAdvisorySlot(r.message.text);
  } catch (e) {
    if (!(e instanceof ClaimsDecodeError)) throw e;
    return { ok: false, reason: e.bound === "claims" ? "too-many-entries" : e.bound === "text" ? "oversize" : "bad-value" };
  }
  if (slot.claims.length > maxClaimsPerSlot) return { ok: false, reason: "too-many-entries" };
  if (slot.peer !== from) return { ok: false, reason: "not-author" };
  return { ok: true, message: { kind: r.message.kind, slot } };
}

/** A write this peer refused to make because it would break a named limit (nothing was changed or sent). */
export class ClaimsLimitError extends RangeError {
  readonly limit: "maxClaimsPerSlot" | "maxFrameBytes" | "MAX_SLOT_TEXT";

  constructor(limit: "maxClaimsPerSlot" | "maxFrameBytes" | "MAX_SLOT_TEXT", message: string) {
    super(message);
    this.name = "ClaimsLimitError";
    this.limit = limit;
  }
}

/** A keeper answer: claims.md §3's view of a part, with the mode, its guarantee and the time it was judged at. */
export interface KeeperAnswer extends KeeperView {
  readonly mode: "keeper";
  readonly guarantee: string;
  /** This peer's clock (ms) the view was judged at. */
  readonly at: number;
}

/** An advisory answer: who holds `item` as this peer sees it, and the losers on it. */
export interface AdvisoryAnswer {
  readonly mode: "advisory";
  readonly guarantee: string;
  readonly item: string;
  /** The earliest unexpired claimant, or `undefined` when nobody holds the item. */
  readonly holder: string | undefined;
  readonly claim: AdvisoryClaim | undefined;
  /** This peer holds the item (it may work on it; another peer may still be duplicating it until a merge). */
  readonly mine: boolean;
  /** This peer's own unexpired claim on the item, when it has one (it may have lost to an earlier one). */
  readonly own: AdvisoryClaim | undefined;
  /** Claims on the item that lost to the holder. */
  readonly duplicates: readonly AdvisoryDuplicate[];
  readonly at: number;
}

/** Counters of the claims channel. */
export interface ClaimsGossipCounters {
  framesIn: number;
  framesOut: number;
  /** Inbound copies that replaced a slot (the rest were stale or repeated). */
  slotsReplaced: number;
  /** Anti-entropy rounds run. */
  antiEntropyRounds: number;
  /** Re-sends dropped because `maxPendingSends` was reached (anti-entropy repairs them). */
  pendingDropped: number;
  /** Restored own keeper claims closed at boot because the config no longer lists their part (see `closedAtBoot`). */
  unconfiguredClosed: number;
  keeperSlots: number;
  advisorySlots: number;
}

/**
 * Keeper and advisory claims as a node exposes them (claims.md §3–4 on node.md channel 5). Each answer names its
 * mode and guarantee. Times are this peer's `Timers`; claim times travel as each writer's own clock.
 */
export interface GossipClaims {
  /** The configured keeper parts and their rules. */
  readonly parts: ReadonlyMap<string, KeeperRule>;
  /**
   * The parts of this peer's own open keeper claims, restored from the store, that the node closed at boot because
   * the config no longer lists them (claims.md §3 Close: nobody would renew them, and a stays-put one would hold its
   * part for `unclosedMs`); the close is persisted and sent like any own write. Empty when there were none, or when
   * the store refused the close (the node has then failed closed).
   */
  readonly closedAtBoot: readonly string[];
  /**
   * Claims.md §3 `renew(part, { active, take, wroteUpTo })`: writes (or renews, or reopens) this peer's claim on
   * `part` and says who keeps it now. The node renews the claim by itself every `renewEveryMs` until `closeKeeper`.
   */
  keeper(part: string, renewal?: KeeperRenewal): KeeperAnswer;
  /** Claims.md §3 `look(part)`: who keeps `part`, without claiming it. */
  look(part: string): KeeperAnswer;
  /** Closes this peer's claim on `part` (it quits the part), saying how far it wrote its records. */
  closeKeeper(part: string, wroteUpTo?: number): KeeperAnswer;
  /** Claims.md §4: claims `item` for `ttlMs` (default `advisoryTtlMs`); re-claiming keeps its place and extends it. */
  advisory(item: string, ttlMs?: number): AdvisoryAnswer;
  /** Gives up this peer's claim on `item` (work done or abandoned); `false` when it had none. */
  dropAdvisory(item: string): boolean;
  /** Who holds `item` now, as this peer sees it. */
  holder(item: string): AdvisoryAnswer;
  /** Every held item and its holder's claim, in item order. */
  holders(): readonly AdvisoryClaim[];
  /** Claims.md §4 `duplicates()`: every unexpired claim that lost its item, by item. */
  duplicates(): readonly AdvisoryDuplicate[];
  /** Claims.md §4 `next(candidates, self)`: this peer's order of `candidates`, and the first nobody else holds. */
  next(candidates: readonly string[]): { order: readonly string[]; first: string | undefined };
  /** The replicated values as this peer has them (convergence checks, diagnostics). */
  slots(): { keeper: KeeperSlots; advisory: AdvisorySlots };
  counters(): ClaimsGossipCounters;
}

interface ClaimsGossipOptions {
  readonly channel: Seam;
  readonly epoch: number;
  readonly timers: Timers;
  readonly config: ClaimsGossipConfig;
  readonly rejections: RejectionCounter;
  /** The node's frame limit; the channel's own (one byte less than the seam's) also applies. */
  readonly maxFrameBytes: number;
  /**
   * This peer's own keeper slot as last persisted (`encodeKeeperSlot` text): a restarted peer continues its claims —
   * same `claimedAt` and `takenAt`, open ones renewed by the tick — instead of writing new ones that forget them.
   */
  readonly restoredKeeperSlot?: string;
  /**
   * Makes an own keeper slot durable before it is installed or sent; `false` when the store refused it (the node
   * has failed closed), and the write is then refused too.
   */
  readonly persistKeeperSlot?: (text: string) => boolean;
}

/** An own keeper write the node's store refused to make durable: nothing changed and nothing was sent. */
export class ClaimsPersistError extends Error {
  constructor() {
    super("the node's store refused to persist this peer's keeper slot (the node has failed closed: see its persist-failed event); nothing changed");
    this.name = "ClaimsPersistError";
  }
}

/**
 * An own keeper or advisory write on a node that is shutting down (or shut down): its claims layer closed first, so
 * nothing changed and nothing was sent. Not a bad argument — the same write on a running peer is fine.
 */
export class ClaimsClosedError extends Error {
  constructor() {
    super("the node is shut down (or shutting down): its claims layer is closed, so nothing changed and nothing was sent; make the write on a running peer");
    this.name = "ClaimsClosedError";
  }
}

/**
 * The claims channel of one node: this peer's keeper state and advisory slots, the frames that carry them, and
 * the timers that renew, observe and repair. Bad inbound frames are rejected and counted, never thrown.
 */
export class ClaimsGossip implements GossipClaims {
  readonly #channel: Seam;
  readonly #self: PeerId;
  readonly #epoch: number;
  readonly #timers: Timers;
  readonly #config: ClaimsGossipConfig;
  readonly #rejections: RejectionCounter;
  readonly #maxFrameBytes: number;
  readonly #persist: ((text: string) => boolean) | undefined;
  readonly parts: ReadonlyMap<string, KeeperRule>;
  readonly closedAtBoot: readonly string[];
  #keeper: KeeperState;
  #advisory: AdvisorySlots = emptySlots();
  /** Own slots changed since the last broadcast (sent together on the next turn). */
  readonly #dirty = new Set<GossipMode>();
  #flushTimer: unknown = null;
  #tickTimer: unknown = null;
  /** (peer, mode) re-sends after backpressure, bounded by `maxPendingSends`. */
  readonly #pending = new Map<string, { peer: PeerId; mode: GossipMode }>();
  #lastAntiEntropy: number;
  #closed = false;
  readonly #counters: ClaimsGossipCounters = { framesIn: 0, framesOut: 0, slotsReplaced: 0, antiEntropyRounds: 0, pendingDropped: 0, unconfiguredClosed: 0, keeperSlots: 0, advisorySlots: 0 };
  readonly #off: (() => void)[] = [];

  constructor(o: ClaimsGossipOptions) {
    this.#channel = o.channel;
    this.#self = o.channel.self;
    this.#epoch = o.epoch;
    this.#timers = o.timers;
    this.#config = o.config;
    this.#rejections = o.rejections;
    this.#maxFrameBytes = Math.min(o.maxFrameBytes, o.channel.maxFrameBytes);
    this.#persist = o.persistKeeperSlot;
    this.#keeper = keeperState({ self: this.#self, epoch: o.epoch, rules: o.config.keeperRules, timings: o.config.keeperTimings });
    if (o.restoredKeeperSlot !== undefined) this.#keeper = restoreOwnKeeperSlot(this.#keeper, o.restoredKeeperSlot);
    this.parts = this.#keeper.rules;
    this.closedAtBoot = this.#closeUnconfiguredAtBoot();
    this.#lastAntiEntropy = o.timers.now();
    this.#off.push(o.channel.onFrame((from, frame) => this.#receive(from, frame)));
    // Seams hand out a fresh set on every membership change, so keeping the previous one costs nothing; the
    // diff is walked only when this peer has a slot to send (a 1,000-peer fleet without claims pays O(1) per change).
    let members = o.channel.peers.get();
    this.#off.push(
      o.channel.peers.subscribe((now) => {
        // First contact: a peer that (re)joined gets our own slots at once (claims.md §3 "Replication").
        if (this.#keeper.slots.has(this.#self) || this.#advisory.has(this.#self)) {
          const joined: PeerId[] = [];
          for (const p of now) if (!members.has(p)) joined.push(p);
          for (const p of sortedIds(joined)) this.#sendOwn(p);
        }
        members = now;
      }),
    );
    this.#tickTimer = o.timers.set(() => this.#tick(), o.config.tickMs);
  }

  // ---- keeper (claims.md §3) -------------------------------------------------------------------

  keeper(part: string, renewal: KeeperRenewal = {}): KeeperAnswer {
    this.#rule(part, "keeper");
    const now = this.#now();
    const out = renewKeeper(this.#keeper, part, now, renewal);
    this.#installKeeper(out.state, out.slot);
    return this.#keeperAnswer(out.view, now);
  }

  look(part: string): KeeperAnswer {
    this.#rule(part, "look");
    const now = this.#now();
    const out = lookKeeper(this.#keeper, part, now);
    this.#keeper = out.state;
    return this.#keeperAnswer(out.view, now);
  }

  closeKeeper(part: string, wroteUpTo?: number): KeeperAnswer {
    this.#rule(part, "closeKeeper");
    const now = this.#now();
    const out = closeKeeper(this.#keeper, part, now, wroteUpTo);
    this.#installKeeper(out.state, out.slot);
    return this.#keeperAnswer(out.view, now);
  }

  // ---- advisory (claims.md §4) -----------------------------------------------------------------

  advisory(item: string, ttlMs: number = this.#config.advisoryTtlMs): AdvisoryAnswer {
    const now = this.#now();
    const own = this.#advisory.get(this.#self);
    const live = (own?.claims ?? []).filter((c) => c.expiresAt > now);
    if (!live.some((c) => c.item === item) && live.length + 1 > this.#config.maxClaimsPerSlot) {
      throw new ClaimsLimitError("maxClaimsPerSlot", `this peer already holds ${live.length} advisory claims (claims.maxClaimsPerSlot); drop some first`);
    }
    const slot = claimAdvisory(own, this.#self, this.#epoch, item, now, ttlMs);
    this.#installAdvisory(slot);
    return this.#advisoryAnswer(item, now);
  }

  dropAdvisory(item: string): boolean {
    const own = this.#advisory.get(this.#self);
    // a claim that already expired holds nothing: there is nothing to drop (and no new slot version to send)
    const now = this.#now();
    if (own === undefined || !own.claims.some((c) => c.item === item && c.expiresAt > now)) return false;
    this.#installAdvisory(dropAdvisory(own, this.#epoch, item));
    return true;
  }

  holder(item: string): AdvisoryAnswer {
    if (typeof item !== "string") throw new TypeError("holder: item must be a string");
    return this.#advisoryAnswer(item, this.#now());
  }

  holders(): readonly AdvisoryClaim[] {
    return [...advisoryHolders(this.#advisory, this.#now()).values()];
  }

  duplicates(): readonly AdvisoryDuplicate[] {
    return duplicates(this.#advisory, this.#now());
  }

  next(candidates: readonly string[]): { order: readonly string[]; first: string | undefined } {
    if (!Array.isArray(candidates) || candidates.some((c) => typeof c !== "string")) throw new TypeError("next: candidates must be a list of strings");
    return { order: next(candidates, this.#self), first: nextUnclaimed(candidates, this.#self, this.#advisory, this.#now()) };
  }

  slots(): { keeper: KeeperSlots; advisory: AdvisorySlots } {
    return { keeper: this.#keeper.slots, advisory: this.#advisory };
  }

  counters(): ClaimsGossipCounters {
    return { ...this.#counters, keeperSlots: this.#keeper.slots.size, advisorySlots: this.#advisory.size };
  }

  /**
   * Stops the timers and the channel handler. With `quit`, this peer first closes its open keeper claims (claims.md
   * §3 "Close": a peer that quits says so) and sends its slots once more, best effort.
   */
  close(quit = true): void {
    if (this.#closed) return;
    try {
      if (quit) this.#quit();
    } finally {
      // whatever the quit ran into, the timers and the handlers stop: a closed node must not renew or answer
      this.#closed = true;
      if (this.#flushTimer !== null) this.#timers.clear(this.#flushTimer);
      if (this.#tickTimer !== null) this.#timers.clear(this.#tickTimer);
      for (const f of this.#off) f();
    }
  }

  /** Closes this peer's open keeper claims, persists its keeper slot and sends its slots once more (best effort). */
  #quit(): void {
    const now = this.#now();
    for (const c of this.#keeper.slots.get(this.#self)?.claims ?? []) {
      if (c.closedAt !== undefined) continue;
      // A claim restored from the store on a part the config no longer lists (left open only when the store refused
      // its close at boot) has no rule to look with, but closing needs none: write it closed straight into the own slot.
      this.#keeper = this.#keeper.rules.has(c.part) ? closeKeeper(this.#keeper, c.part, now, c.wroteUpTo).state : closeUnconfigured(this.#keeper, c, now);
      this.#dirty.add("keeper");
    }
    // best effort, like the send: a store that refuses leaves the claims open on disk, to be renewed after a restart
    const own = this.#keeper.slots.get(this.#self);
    if (this.#dirty.has("keeper") && own !== undefined) this.#persist?.(encodeKeeperSlot(own));
    this.#flush();
  }

  // ---- internals -------------------------------------------------------------------------------

  /**
   * Closes this peer's restored open keeper claims on parts the config no longer lists (the operator dropped the part
   * and restarted): no rule renews them, so left open they would lapse, and a stays-put one would hold its part at
   * every peer for `unclosedMs` after its last renewal. Closing needs no rule (claims.md §3: a closed claim holds
   * nothing). Persisted first; a store that refuses leaves them as restored (the node has failed closed, and
   * `close()` closes them best effort). Sent on the first turn, and to each peer at first contact. Returns the parts.
   */
  #closeUnconfiguredAtBoot(): readonly string[] {
    const now = this.#now();
    let state = this.#keeper;
    const parts: string[] = [];
    for (const c of state.slots.get(this.#self)?.claims ?? []) {
      if (c.closedAt !== undefined || state.rules.has(c.part)) continue;
      state = closeUnconfigured(state, c, now);
      parts.push(c.part);
    }
    if (parts.length === 0) return parts;
    if (this.#persist !== undefined && !this.#persist(encodeKeeperSlot(state.slots.get(this.#self)!))) return [];
    this.#keeper = state;
    this.#counters.unconfiguredClosed += parts.length;
    this.#changed("keeper");
    return parts.sort();
  }

  #now(): number {
    return Math.max(0, Math.floor(this.#timers.now()));
  }

  #rule(part: string, verb: string): KeeperRule {
    if (typeof part !== "string") throw new TypeError(`${verb}: part must be a string`);
    const rule = this.#keeper.rules.get(part);
    if (rule === undefined) {
      const known = [...this.#keeper.rules.keys()].sort();
      throw new RangeError(`${verb}: no keeper part ${JSON.stringify(part)} is configured (HeddleConfig claims.keeperRules; in a daemon config: claims.keeper.parts); configured: ${known.length === 0 ? "(none)" : known.join(", ")}`);
    }
    return rule;
  }

  #keeperAnswer(view: KeeperView, at: number): KeeperAnswer {
    return { mode: "keeper", guarantee: CLAIM_GUARANTEES.keeper, at, ...view };
  }

  #advisoryAnswer(item: string, at: number): AdvisoryAnswer {
    const claim = advisoryHolder(this.#advisory, item, at);
    const own = this.#advisory.get(this.#self)?.claims.find((c) => c.item === item && c.expiresAt > at);
    return {
      mode: "advisory",
      guarantee: CLAIM_GUARANTEES.advisory,
      item,
      holder: claim?.peer,
      claim,
      mine: claim !== undefined && claim.peer === this.#self,
      own,
      duplicates: duplicates(this.#advisory, at).filter((d) => d.item === item),
      at,
    };
  }

  /** Checks an own slot against the limits before anything changes: a refused write leaves no trace. */
  #checkOwn(kind: GossipMode, slot: KeeperSlot | AdvisorySlot): void {
    if (slot.claims.length > this.#config.maxClaimsPerSlot) {
      throw new ClaimsLimitError("maxClaimsPerSlot", `this peer's ${kind} slot would hold ${slot.claims.length} claims, above claims.maxClaimsPerSlot (${this.#config.maxClaimsPerSlot})`);
    }
    // every receiver refuses a slot text past MAX_SLOT_TEXT (counted as `oversize` against this peer), even in a
    // frame under maxFrameBytes: refuse the write here instead of sending what nobody will keep
    const text = kind === "keeper" ? encodeKeeperSlot(slot as KeeperSlot) : encodeAdvisorySlot(slot as AdvisorySlot);
    if (text.length > MAX_SLOT_TEXT) {
      throw new ClaimsLimitError("MAX_SLOT_TEXT", `this peer's ${kind} slot would be ${text.length} code units long, above MAX_SLOT_TEXT (${MAX_SLOT_TEXT}), which every peer refuses; drop claims (or use shorter items) first`);
    }
    const bytes = kind === "keeper" ? encodeClaimsFrame("keeper", slot as KeeperSlot) : encodeClaimsFrame("advisory", slot as AdvisorySlot);
    if (bytes.length > this.#maxFrameBytes) {
      throw new ClaimsLimitError("maxFrameBytes", `this peer's ${kind} slot would take ${bytes.length} bytes, above the frame limit ${this.#maxFrameBytes} (maxFrameBytes); drop claims first`);
    }
  }

  #installKeeper(state: KeeperState, slot: KeeperSlot): void {
    if (this.#closed) throw new ClaimsClosedError();
    this.#checkOwn("keeper", slot);
    if (this.#persist !== undefined && !this.#persist(encodeKeeperSlot(slot))) throw new ClaimsPersistError();
    this.#keeper = state;
    this.#changed("keeper");
  }

  #installAdvisory(slot: AdvisorySlot): void {
    if (this.#closed) throw new ClaimsClosedError();
    this.#checkOwn("advisory", slot);
    this.#advisory = putAdvisorySlot(this.#advisory, slot).slots;
    this.#changed("advisory");
  }

  /** Delta-send on change: own slots changed within one turn leave together, once, as their latest version. */
  #changed(mode: GossipMode): void {
    this.#dirty.add(mode);
    this.#flushTimer ??= this.#timers.set(() => {
      this.#flushTimer = null;
      this.#flush();
    }, 0);
  }

  #flush(): void {
    if (this.#closed) return;
    for (const mode of [...this.#dirty].sort()) {
      for (const p of sortedIds(this.#channel.peers.get())) this.#sendTo(p, mode);
    }
    this.#dirty.clear();
  }

  #ownFrame(mode: GossipMode): Uint8Array | undefined {
    if (mode === "keeper") {
      const s = this.#keeper.slots.get(this.#self);
      return s === undefined ? undefined : encodeClaimsFrame("keeper", s);
    }
    const s = this.#advisory.get(this.#self);
    return s === undefined ? undefined : encodeClaimsFrame("advisory", s);
  }

  #sendOwn(peer: PeerId): void {
    this.#sendTo(peer, "keeper");
    this.#sendTo(peer, "advisory");
  }

  #sendTo(peer: PeerId, mode: GossipMode): void {
    if (this.#closed) return;
    const frame = this.#ownFrame(mode);
    if (frame === undefined) return;
    const r = this.#channel.send(peer, frame);
    const key = `${mode}\u0000${peer}`;
    if (r === "queued") {
      this.#counters.framesOut++;
      this.#pending.delete(key);
    } else if (r === "backpressure") {
      if (this.#pending.has(key)) return;
      if (this.#pending.size >= this.#config.maxPendingSends) {
        this.#counters.pendingDropped++;
        return;
      }
      this.#pending.set(key, { peer, mode });
    }
  }

  #tick(): void {
    if (this.#closed) return;
    try {
      this.#tickOnce();
    } finally {
      // One tick that ran into a bug (e.g. a persist callback that threw) must not end renewal and repair for good.
      if (!this.#closed) this.#tickTimer = this.#timers.set(() => this.#tick(), this.#config.tickMs);
    }
  }

  #tickOnce(): void {
    const now = this.#now();
    const t = this.#config.keeperTimings;
    // Renew every open own claim that is due (claims.md §3 "Renewal": a running peer renews periodically).
    for (const c of this.#keeper.slots.get(this.#self)?.claims ?? []) {
      if (c.closedAt !== undefined || now - c.renewedAt < t.renewEveryMs || !this.#keeper.rules.has(c.part)) continue;
      const out = renewKeeper(this.#keeper, c.part, now);
      try {
        this.#installKeeper(out.state, out.slot);
      } catch (e) {
        // a renewal past a limit, or one the failed store refused, is not made: the claim lapses
        if (!(e instanceof ClaimsLimitError) && !(e instanceof ClaimsPersistError)) throw e;
      }
    }
    // Observe every part, so a change of keeper starts its settling time when it happens, not when next asked.
    for (const part of this.#keeper.rules.keys()) this.#keeper = lookKeeper(this.#keeper, part, now).state;
    // Retry sends refused for backpressure.
    for (const [key, { peer, mode }] of [...this.#pending]) {
      this.#pending.delete(key);
      this.#sendTo(peer, mode);
    }
    if (now - this.#lastAntiEntropy >= this.#config.antiEntropyMs) {
      this.#lastAntiEntropy = now;
      if (this.#keeper.slots.has(this.#self) || this.#advisory.has(this.#self)) {
        this.#counters.antiEntropyRounds++;
        for (const p of sortedIds(this.#channel.peers.get())) this.#sendOwn(p);
      }
    }
  }

  #receive(from: PeerId, frame: Uint8Array): void {
    if (this.#closed) return;
    if (frame.length > this.#maxFrameBytes) return this.#rejections.reject(from, "claims", "oversize");
    const r = readClaimsFrame(frame, from, this.#config.maxClaimsPerSlot);
    if (!r.ok) return this.#rejections.reject(from, "claims", r.reason);
    if (from === this.#self) return this.#rejections.reject(from, "claims", "not-author");
    this.#counters.framesIn++;
    const now = this.#now();
    if (r.message.kind === "keeper") {
      const before = this.#keeper.slots.get(from);
      const out = receiveKeeperSlot(this.#keeper, from, r.message.slot as KeeperSlot, now);
      if (!out.accepted) return this.#rejections.reject(from, "claims", "not-author");
      this.#keeper = out.state;
      if (this.#keeper.slots.get(from) !== before) this.#counters.slotsReplaced++;
    } else {
      const { slots, replaced } = putAdvisorySlot(this.#advisory, r.message.slot as AdvisorySlot);
      this.#advisory = slots;
      if (replaced) this.#counters.slotsReplaced++;
    }
  }
}
