// The commands that call a running daemon's API: reads (status, tree, peers, holdings, bounds),
// scripting verbs (reserve, complete, cancel, demand) and operator verbs (mint, prepare, activate, close,
// retire, enroll, depart, claims, leader transfer, sync, roster, outcome).
import { parseArgs, type ParseArgsConfig } from "node:util";
import type { HeddleClient } from "@heddle/client";
import { rejectRepeatedOptions } from "../args.ts";
import { EXIT, UsageError } from "../exit-codes.ts";
import { pct, table } from "../table.ts";
import { clientOf, TARGET_HELP, TARGET_OPTIONS, type TargetOptions } from "../target.ts";
import type { Io } from "./io.ts";

type Json = Record<string, any>;

/** Parses `argv` with the target options, `--json` and `extra`; returns values, positionals and a client factory. */
export function parseApiArgs<E extends NonNullable<ParseArgsConfig["options"]>>(argv: string[], extra: E) {
  const options = { ...TARGET_OPTIONS, json: { type: "boolean" }, help: { type: "boolean", short: "h" }, ...extra } as NonNullable<ParseArgsConfig["options"]>;
  const { values, positionals, tokens } = parseArgs({ args: argv, allowPositionals: true, options, tokens: true });
  rejectRepeatedOptions(tokens, options);
  const v = values as Record<string, string | boolean | undefined>;
  return { values: v, positionals, client: () => clientOf(v as TargetOptions) };
}

function short(id: string): string {
  return id.length > 16 ? `…${id.slice(-8)}` : id;
}

function need(positionals: string[], n: number, usage: string): string[] {
  if (positionals.length !== n) throw new UsageError(`usage: ${usage}`);
  return positionals;
}

const INT64_MAX = (1n << 63n) - 1n;

/** An amount of service units as the daemon takes it: an integer `min` … 2^63 − 1 (a decimal string on the wire). */
function amountArg(s: string, what: string, min: 0 | 1 = 0): string {
  if (!/^[0-9]+$/.test(s)) throw new UsageError(`${what} must be a ${min === 1 ? "positive" : "non-negative"} integer, got ${JSON.stringify(s)}`);
  const n = BigInt(s);
  if (n < BigInt(min) || n > INT64_MAX) throw new UsageError(`${what} must be ${min} … ${INT64_MAX}, got ${s}`);
  return n.toString();
}

/** Longest `--lease` (s) and `--ttl` (ms) the daemon accepts (DemandBody.leaseMs, TakeBody/AdvisoryBody.ttlMs). */
const MAX_LEASE_S = 86_400;
const MAX_TTL_MS = 604_800_000;

/** `--ttl MS`: an integer 1 … 7 days in milliseconds, or undefined. */
function ttlArg(s: string | boolean | undefined): number | undefined {
  if (typeof s !== "string") return undefined;
  const ttl = /^[0-9]+$/.test(s) ? Number(s) : NaN;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_TTL_MS) throw new UsageError(`--ttl must be an integer number of milliseconds, 1 … ${MAX_TTL_MS} (7 days), got ${JSON.stringify(s)}`);
  return ttl;
}

/**
 * Lengths the daemon's schemas allow (api-schemas.ts, gossip-claims-api.ts; counted in code points as its validator
 * does): checked here so a value it always refuses exits 2 with nothing sent, as the exit table says.
 */
const MAX_ID_CHARS = 256;
const MAX_CLAIM_KEY_CHARS = 512;
const MAX_ITEM_CHARS = 1024;
const MAX_TAKE_KEYS = 256;
const MAX_NEXT_ITEMS = 4096;

/** `s` if it has 1 … `max` characters, else a UsageError naming `what`. */
function sized(s: string, what: string, max: number): string {
  const n = [...s].length;
  if (n < 1 || n > max) throw new UsageError(`${what} must be 1 … ${max} characters, got ${n}`);
  return s;
}

/** A non-negative integer the daemon takes as a JSON number (0 … 2^53 − 1): larger would be rounded on the way. */
function safeIntArg(s: string, what: string): number {
  if (!/^[0-9]+$/.test(s)) throw new UsageError(`${what} must be a non-negative integer, got ${JSON.stringify(s)}`);
  const n = Number(s);
  if (!Number.isSafeInteger(n)) throw new UsageError(`${what} must be at most ${Number.MAX_SAFE_INTEGER}, got ${s}`);
  return n;
}

/**
 * A weight as the daemon takes it: a positive integer or fraction `N/D`, each part 1 … 2^63 − 1. Sent as a JSON
 * number while it is a safe integer, else as a decimal string (a number above 2^53 would be rounded on the way).
 */
export function weightArg(s: string, what = "WEIGHT"): number | string {
  const m = /^([0-9]+)(?:\/([0-9]+))?$/.exec(s);
  const parts = m === null ? null : [BigInt(m[1]!), ...(m[2] !== undefined ? [BigInt(m[2])] : [])];
  if (parts === null || parts.some((x) => x < 1n || x > INT64_MAX)) {
    throw new UsageError(`${what} must be a positive integer such as 3 or a fraction such as 3/2, each part 1 … ${INT64_MAX}, got ${JSON.stringify(s)}`);
  }
  if (parts.length === 1 && parts[0]! <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(parts[0]);
  return parts.join("/");
}

async function withClient<T>(make: () => HeddleClient, f: (c: HeddleClient) => Promise<T>): Promise<T> {
  const c = make();
  try {
    return await f(c);
  } finally {
    c.close();
  }
}

/** One API command: its usage line, extra options, and what it does. */
interface ApiCommand {
  readonly usage: string;
  readonly summary: string;
  /** How many positional arguments it takes, [fewest, most]: more is a usage error naming the extra ones. */
  readonly args: readonly [number, number];
  readonly options?: NonNullable<ParseArgsConfig["options"]>;
  run(c: HeddleClient, pos: string[], v: Record<string, string | boolean | undefined>, io: Io): Promise<number>;
}

function printJsonOr(io: Io, v: Record<string, unknown>, body: unknown, human: () => string): number {
  io.out(v["json"] ? `${JSON.stringify(body)}\n` : human());
  return EXIT.ok;
}

/**
 * Runs a keyed act whose peer (`--holder`, `PEER_ID`) the CLI filled in with this peer's id (`filled`, else
 * undefined). If its outcome is unknown, says which id it named: a retry through another peer's config must name the
 * same one, or it is another act (409 keyReuse).
 */
async function filledIn<T>(io: Io, filled: string | undefined, option: string, act: () => Promise<T>): Promise<T> {
  try {
    return await act();
  } catch (e) {
    if (filled !== undefined && (e as { sent?: unknown }).sent === true) io.err(`heddle: it named this peer, ${filled}, for ${option}; a retry through another peer must pass ${option === "PEER_ID" ? filled : `--holder ${filled}`} to be the same act\n`);
    throw e;
  }
}

/**
 * `complete`/`cancel` of an id the daemon holds no open reservation under (its 200 `no-such-reservation`, node.md
 * §8): exit {@link EXIT.noSuchReservation} so a script can tell it from a charge; `--json` still prints the answer.
 */
function noSuchReservation(io: Io, v: Record<string, unknown>, body: unknown, id: string, what: string): number {
  const by = (body as { reservedBy?: unknown }).reservedBy;
  if (v["json"]) io.out(`${JSON.stringify(body)}\n`);
  else if (typeof by === "string") {
    io.err(`heddle: reservation ${JSON.stringify(id)} was made on peer ${by}, not this one: ${what} here — send it to that peer's API (--config of that peer, or --url)\n`);
  } else {
    io.err(
      `heddle: no open reservation ${JSON.stringify(id)} on this peer (completed or cancelled already, or made on another peer, or never): ${what}; ` +
        "heddle reservations lists the open ones\n",
    );
  }
  return EXIT.noSuchReservation;
}

const when = (ms: number | null) => (ms === null ? "never" : new Date(ms).toISOString());

/** The refresh of the demand slot failing, in one line (empty while it works). */
function refreshWarning(r: Json): string {
  const f = r.failing as Json | null;
  if (f === null) return "";
  const why = f.code === "board-full" ? `the rolled-up demand no longer fits this peer's demand slot (${f.limit} ${f.value}; after a reshape, lineages may be longer) — withdraw some standing demand` : f.message;
  return `refresh   FAILING since ${when(f.since)} (${f.count}× in a row, last success ${when(r.lastSuccessAt)}): ${why}: ${f.unadvertised} edge(s) not advertised as wanted, and nothing is re-sent, so the slot's entries lapse on the peers\n`;
}

/** `heddle demand` alone: standing demand, the slot's entries (live or lapsed on the peers), and the refresh. */
function renderDemand(d: Json): string {
  const standing = (d.standing as Json[]).map((s) => [s.edge, s.demand.targetOutstanding, s.demand.maximumUsefulGrant, when(s.expiresAt)]);
  const ads = (d.advertisements as Json[]).map((a) => [a.edge, a.demand.targetOutstanding, a.demand.maximumUsefulGrant, when(a.advertisedAt), a.live ? "live" : "LAPSED (peers no longer count it)"]);
  const refresh = d.refresh.ok ? `refresh   ok (last ${when(d.refresh.lastSuccessAt)})\n` : refreshWarning(d.refresh);
  return `${refresh}standing demand\n${table(["edge", "target", "max grant", "lapses at"], standing)}advertised by this peer\n${table(["edge", "target", "max grant", "advertised at", "on the peers"], ads)}`;
}

function renderStatus(s: Json, p: Json): string {
  const lines = [
    `peer      ${s.self}  (${s.mode} mode, epoch ${s.epoch ?? "-"})`,
    `ledger    digest ${s.ledgerDigest}  minted ${s.mintedTotal}  leaf-spent ${s.leafSpentTotal}  conflicts ${s.conflicts.length === 0 ? "none" : s.conflicts.map((c: Json) => c.kind).join(", ")}`,
    `work      open reservations ${s.reservationsOpen ?? "-"}  scheduler rounds ${s.schedulerTicks}${s.failed ? "  FAILED CLOSED (restart it)" : ""}`,
  ];
  // rounds failing now (the daemon's log has the detail once a minute)
  for (const f of (s.schedulerFailures ?? []) as Json[]) lines.push(`failing   ${f.where}: ${f.message} (${f.count}× since ${f.firstAt})`);
  if (s.control !== null) {
    const c = s.control;
    lines.push(`control   role ${c.role}  leader ${c.leader === null ? "none" : short(c.leader)}  applied ${c.appliedIndex}  writable ${c.isWritable}  enrolled ${c.enrolled.length}`);
    // a member whose settings differ from its log's stops applying it: say which config keys to fix
    if (c.halted !== undefined && c.halted !== null) {
      const keys = ((c.halted.settings ?? []) as Json[]).map((x) => x.configKey ?? x.setting);
      lines.push(`HALTED    at index ${c.halted.index}: ${c.halted.message}${keys.length > 0 ? `\n          fix ${keys.join(", ")} in this peer's config to the cluster's value and restart it` : ""}`);
    }
    // which Raft log store the member runs on (store.raftLog), and a write failure that stopped it
    if (c.log !== undefined) {
      lines.push(`raft log  ${c.log.kind === "wal" ? "segmented log store" : "SQLite"} ${c.log.path}${c.log.failed !== null ? `  FAILED CLOSED: ${c.log.failed} (restart it once the disk is writable)` : ""}`);
    }
    // a snapshot a member cannot install (its mode.raft.snapshotMaxBytes below the snapshot's size): it never catches up
    for (const st of (c.snapshotStalls ?? []) as Json[]) lines.push(`STALLED   ${st.message}`);
  }
  const connected = p.peers.filter((x: Json) => !x.self && x.connected).length;
  lines.push(`peers     ${connected} of ${p.peers.length - 1} other peer(s) connected`, "");
  const rows = p.peers.map((x: Json) => [x.id, x.self ? "self" : x.connected ? "connected" : "not connected", x.unreachable ? "unreachable" : x.self ? "-" : "ok", x.lastLiveness === null ? "-" : x.lastLiveness.kind]);
  return `${lines.join("\n")}\n${table(["peer", "link", "liveness", "last event"], rows)}`;
}

function renderTree(t: Json): string {
  const children = new Map<string, Json[]>();
  for (const e of t.edges) {
    if (e.lifecycle !== "ACTIVE" && e.lifecycle !== "CLOSING") continue;
    const list = children.get(e.parent) ?? [];
    list.push(e);
    children.set(e.parent, list);
  }
  const groups = new Map<string, Json>(t.groups.map((g: Json) => [g.group, g]));
  const out: string[] = [];
  const rows: string[][] = [];
  const walk = (g: string, prefix: string, edge: Json | null, last: boolean, depth: number) => {
    const gi = groups.get(g);
    const label = depth === 0 ? g : `${prefix}${last ? "└─ " : "├─ "}${g}`;
    rows.push([
      label,
      edge === null ? "" : `${edge.weight}`,
      edge === null ? "" : pct(edge.weightShare),
      edge === null ? "" : edge.committedService,
      edge === null ? "" : pct(edge.serviceShare),
      gi?.holdings ?? "0",
      gi?.holdingsTotal ?? "0",
      edge === null ? "" : edge.lifecycle === "ACTIVE" ? "" : edge.lifecycle,
    ]);
    if (depth > 64) return;
    const kids = children.get(g) ?? [];
    kids.forEach((e, i) => walk(e.child, depth === 0 ? "" : `${prefix}${last ? "   " : "│  "}`, e, i === kids.length - 1, depth + 1));
  };
  walk(t.root, "", null, true, 0);
  out.push(table(["group", "weight", "w-share", "service", "s-share", "held here", "held (all)", "state"], rows));
  const other = t.edges.filter((e: Json) => e.lifecycle === "PREPARED" || e.lifecycle === "RETIRED");
  if (other.length > 0) out.push(`\nother edges: ${other.map((e: Json) => `${e.id} (${e.lifecycle})`).join(", ")}\n`);
  return out.join("");
}

/** A recorded control outcome (`heddle outcome`), as the verb that made it would have printed it. */
function outcomeText(o: Json): string {
  if (o === null || typeof o !== "object") return `${JSON.stringify(o)}\n`;
  if (o.kind === "conflict") return `conflict at index ${o.index}: ${o.conflict.reason}${Object.keys(o.conflict).length > 1 ? ` ${JSON.stringify(o.conflict)}` : ""}\n`;
  const claims = o.claims === undefined ? "" : `\n  claims: ${JSON.stringify(o.claims)}`;
  return `${o.kind} at index ${o.index}${o.noop ? " (no-op: already so)" : ""}${o.mintId !== undefined ? `, mint ${o.mintId}` : ""}${claims}\n`;
}

/**
 * After a prepare: governed.md §3.4 applies one under a parent that does not hang under the root (no check names the
 * parent: a subtree may be built before it is attached), and its child then stays detached (ledger.md ⟨1.1⟩ §5.2).
 * Say so, so a mistyped PARENT does not pass unnoticed. The root itself is left alone (before the first mint it
 * hangs under nothing either), and a tree that cannot be read leaves the note out: the prepare was applied.
 */
async function noteDetachedParent(c: HeddleClient, io: Io, id: string, parent: string, child: string): Promise<void> {
  let tree: Json;
  try {
    tree = (await c.tree()) as Json;
  } catch {
    return;
  }
  if (parent === tree.root || !Array.isArray(tree.groups)) return;
  const g = (tree.groups as Json[]).find((x) => x.group === parent);
  if (g !== undefined && g.detached !== true) return;
  io.err(
    `heddle: note: ${parent} does not hang under the root (${tree.root}) on this peer's view, so ${child} stays detached — it reads 0 and takes no work — ` +
      `until ${parent} is attached (heddle reshape ${parent}); if ${parent} is a typo, heddle retire ${id} abandons the edge\n`,
  );
}

function appliedLine(verb: string, r: Json): string {
  return `${verb}: applied at index ${r.index}${r.noop ? " (no-op: already so)" : ""}${r.mintId !== undefined ? `, mint ${r.mintId}` : ""}\n`;
}

function keeperTable(rows: Json[], guarantee: string = rows[0]?.guarantee ?? ""): string {
  const t = table(
    ["part", "rule", "keeper", "here", "settled", "may act", "sure", "unheard", "closed (wroteUpTo)"],
    rows.map((r) => [
      r.part,
      r.rule,
      r.keeper === null ? "-" : short(r.keeper),
      r.keeps ? "yes" : "no",
      r.settled ? "yes" : "no",
      r.mayAct ? "yes" : "no",
      r.sure ? "yes" : "no",
      r.unheard.length === 0 ? "-" : r.unheard.map(short).join(" "),
      r.closed.length === 0 ? "-" : r.closed.map((x: Json) => `${short(x.peer)}(${x.wroteUpTo ?? "-"})`).join(" "),
    ]),
  );
  return `${rows.length === 0 ? "no keeper parts are configured on this peer (config: claims.keeper.parts)\n" : t}keeper mode: ${guarantee}\n`;
}

function advisoryTable(rows: Json[], guarantee: string): string {
  const t = table(
    ["item", "holder", "mine", "duplicated by"],
    rows.map((r) => [r.item, r.holder === null ? "-" : short(r.holder), r.mine === undefined ? "-" : r.mine ? "yes" : "no", r.duplicates.length === 0 ? "-" : r.duplicates.map((d: Json) => short(d.loser)).join(" ")]),
  );
  return `${t}advisory mode: ${guarantee}\n`;
}

/** Every API command by name (`claims …` and `leader …` by their two words). */
export const API_COMMANDS: Record<string, ApiCommand> = {
  status: {
    args: [0, 0],
    usage: "heddle status",
    summary: "this peer, its ledger and its view of every other peer",
    async run(c, _p, v, io) {
      const [s, p] = await Promise.all([c.status(), c.peers()]);
      return printJsonOr(io, v, { ...s, peers: (p as Json).peers }, () => renderStatus(s as Json, p as Json));
    },
  },
  tree: {
    args: [0, 0],
    usage: "heddle tree",
    summary: "the group tree: weights, shares of service, holdings",
    async run(c, _p, v, io) {
      const t = await c.tree();
      return printJsonOr(io, v, t, () => renderTree(t as Json));
    },
  },
  peers: {
    args: [0, 0],
    usage: "heddle peers",
    summary: "the roster with connection and liveness",
    async run(c, _p, v, io) {
      const p = (await c.peers()) as Json;
      return printJsonOr(io, v, p, () => table(["peer", "self", "connected", "unreachable", "addrs"], p.peers.map((x: Json) => [x.id, x.self, x.connected, x.unreachable, x.addrs.join(" ")])));
    },
  },
  holdings: {
    args: [0, 1],
    usage: "heddle holdings [GROUP]",
    summary: "holdings per group (here, and per replica)",
    async run(c, p, v, io) {
      const h = (await c.holdings(p[0])) as Json;
      // the daemon answers any group name, with zeros for one it does not know: say so, or a typo reads as "nothing held"
      const g = h.groups[0] as Json | undefined;
      if (p[0] !== undefined && g !== undefined && g.holdings === "0" && Object.keys(g.byReplica).length === 0) {
        const all = (await c.holdings()) as Json;
        if (!all.groups.some((x: Json) => x.group === p[0])) io.err(`heddle holdings: ${JSON.stringify(p[0])} is not a group in this peer's tree (heddle tree shows them): nothing is held there\n`);
      }
      return printJsonOr(io, v, h, () => table(["group", "held here", "available", "earmarked", "replicas"], h.groups.map((g: Json) => [g.group, g.holdings, g.available, g.earmarked, Object.keys(g.byReplica).length])));
    },
  },
  bounds: {
    args: [0, 1],
    usage: "heddle bounds [PARENT]",
    summary: "fairness bound metrics per parent (node.md §11)",
    async run(c, p, v, io) {
      const b = (await c.bounds(p[0])) as Json;
      return printJsonOr(io, v, b, () => {
        const rows = table(["parent", "roster", "configured", "current", "observed", "consistent"], b.bounds.map((x: Json) => (x.unavailable !== undefined ? [x.parent, "-", "-", "-", "-", "unavailable"] : [x.parent, x.roster, x.configuredWorstCase, x.currentBound, x.observedDeviation, x.isConsistent])));
        // a parent whose bounds cannot be computed says why, under the table
        const why = b.bounds.filter((x: Json) => x.unavailable !== undefined).map((x: Json) => `${x.parent}: ${x.unavailable}\n`).join("");
        return rows + why;
      });
    },
  },
  reserve: {
    args: [2, 2],
    usage: "heddle reserve LEAF MAXIMUM_COST [--idempotency-key K]",
    summary: "reserve work at a leaf; prints the reservation id",
    options: { "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      const [leaf, max] = need(p, 2, this.usage);
      const r = await c.reserve(leaf!, amountArg(max!, "MAXIMUM_COST", 1), v["idempotency-key"] !== undefined ? { idempotencyKey: v["idempotency-key"] as string } : {});
      return printJsonOr(io, v, r, () => `${r.id}\n`);
    },
  },
  reservations: {
    args: [0, 0],
    usage: "heddle reservations",
    summary: "this peer's open reservations (what a reshape's drain waits for)",
    async run(c, _p, v, io) {
      const r = (await c.reservations()) as Json;
      const rows = (r.reservations as Json[]).map((x) => [x.id, x.leaf, x.maximumCost, typeof x.createdAt === "number" ? when(x.createdAt) : "-"]);
      return printJsonOr(io, v, r, () => (rows.length === 0 ? "no open reservations on this peer\n" : table(["id", "leaf", "maximum cost", "opened"], rows)));
    },
  },
  complete: {
    args: [2, 2],
    usage: "heddle complete RESERVATION_ID ACTUAL_COST",
    summary: "complete a reservation, charging its actual cost exactly once",
    async run(c, p, v, io) {
      const [id, cost] = need(p, 2, this.usage);
      const r = await c.complete(id!, amountArg(cost!, "ACTUAL_COST"));
      if (r.outcome !== "charged") return noSuchReservation(io, v, r, id!, "nothing charged");
      return printJsonOr(io, v, r, () => `charged ${r.charged}\n`);
    },
  },
  cancel: {
    args: [1, 1],
    usage: "heddle cancel RESERVATION_ID",
    summary: "cancel a reservation (charges nothing)",
    async run(c, p, v, io) {
      const [id] = need(p, 1, this.usage);
      const r = await c.cancel(id!);
      if (r.outcome !== "charged") return noSuchReservation(io, v, r, id!, "nothing cancelled");
      return printJsonOr(io, v, r, () => "cancelled\n");
    },
  },
  demand: {
    args: [0, 3],
    usage: "heddle demand [LEAF TARGET [MAX_GRANT] [--edge] [--lease SECONDS]]",
    summary: "stand demand for a leaf (or, with --edge, an edge id); 0 withdraws it; alone: what stands, what is advertised, and whether refreshing it works",
    options: { edge: { type: "boolean" }, lease: { type: "string" } },
    async run(c, p, v, io) {
      if (p.length === 0) {
        const d = (await c.demands()) as Json;
        return printJsonOr(io, v, d, () => renderDemand(d));
      }
      if (p.length < 2 || p.length > 3) throw new UsageError(`usage: ${this.usage}`);
      const target = amountArg(p[1]!, "TARGET");
      const maxGrant = p[2] === undefined ? target : amountArg(p[2], "MAX_GRANT");
      const rawLease = v["lease"] as string | undefined;
      const lease = rawLease === undefined ? undefined : /^[0-9]*\.?[0-9]+$/.test(rawLease) ? Math.round(Number(rawLease) * 1000) : NaN;
      if (lease !== undefined && !(lease >= 100 && lease <= MAX_LEASE_S * 1000)) throw new UsageError(`--lease must be 0.1 … ${MAX_LEASE_S} seconds (24 hours), got ${JSON.stringify(rawLease)}`);
      const r = (await c.demand({ ...(v["edge"] ? { edge: p[0]! } : { leaf: p[0]! }), targetOutstanding: target, maximumUsefulGrant: maxGrant, ...(lease !== undefined ? { leaseMs: lease } : {}) })) as Json;
      const refresh = r.refresh === undefined ? "" : refreshWarning(r.refresh as Json);
      return printJsonOr(io, v, r, () => (r.standing === null ? `demand on ${r.edge} withdrawn\n` : `demand on ${r.edge}: target ${r.standing.demand.targetOutstanding}, max grant ${r.standing.demand.maximumUsefulGrant}\n`) + refresh);
    },
  },
  mint: {
    args: [1, 1],
    usage: "heddle mint AMOUNT [--holder PEER_ID] [--idempotency-key K]",
    summary: "create supply at the root (governed mode); a retry with the same key applies once",
    options: { holder: { type: "string" }, "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      const [amount] = need(p, 1, this.usage);
      const key = v["idempotency-key"] as string | undefined;
      const named = v["holder"] as string | undefined;
      const holder = named ?? (key !== undefined ? await selfId(c) : undefined);
      const r = (await filledIn(io, named === undefined ? holder : undefined, "--holder", () =>
        c.mint(amountArg(amount!, "AMOUNT", 1), {
          ...(holder !== undefined ? { holder } : {}),
          ...(key !== undefined ? { idempotencyKey: key } : {}),
        }),
      )) as Json;
      return printJsonOr(io, v, r, () => appliedLine(`mint ${amount}`, r));
    },
  },
  prepare: {
    args: [4, 4],
    usage: "heddle prepare EDGE_ID PARENT CHILD WEIGHT [--idempotency-key K]",
    summary: "prepare a new edge (governed mode)",
    options: { "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      const [id, parent, child, weight] = need(p, 4, this.usage);
      const w = weightArg(weight!);
      const r = (await c.prepare({ id: id!, parent: parent!, child: child!, weight: w }, v["idempotency-key"] !== undefined ? { idempotencyKey: v["idempotency-key"] as string } : {})) as Json;
      const code = printJsonOr(io, v, r, () => appliedLine(`prepare ${id}`, r));
      if (!v["json"] && r.kind === "applied") await noteDetachedParent(c, io, id!, parent!, child!);
      return code;
    },
  },
  activate: edgeVerb("activate", (c, e, o) => c.activate(e, o)),
  close: edgeVerb("close", (c, e, o) => c.closeEdge(e, o)),
  retire: edgeVerb("retire", (c, e, o) => c.retire(e, o)),
  enroll: {
    args: [0, 1],
    usage: "heddle enroll [PEER_ID]",
    summary: "enroll a replica as a ledger writer (default: this peer)",
    options: { "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      if (p.length > 1) throw new UsageError(`usage: ${this.usage}`);
      const key = v["idempotency-key"] as string | undefined;
      const replica = p[0] ?? (key !== undefined ? await selfId(c) : undefined);
      const r = (await filledIn(io, p[0] === undefined ? replica : undefined, "PEER_ID", () => c.enroll(replica, key !== undefined ? { idempotencyKey: key } : {}))) as Json;
      return printJsonOr(io, v, r, () => appliedLine("enroll", r));
    },
  },
  depart: {
    args: [0, 0],
    usage: "heddle depart",
    summary: "depart this peer (it promises to write no more ledger slots)",
    options: { "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      need(p, 0, this.usage);
      const r = (await c.depart(v["idempotency-key"] !== undefined ? { idempotencyKey: v["idempotency-key"] as string } : {})) as Json;
      return printJsonOr(io, v, r, () => appliedLine("depart", r));
    },
  },
  sync: {
    args: [0, 0],
    usage: "heddle sync",
    summary: "a linearizable read of the control state",
    async run(c, _p, v, io) {
      const r = (await c.sync()) as Json;
      return printJsonOr(io, v, r, () => `applied index ${r.appliedIndex}, minted ${r.mintedTotal}, enrolled ${r.enrolled.length}\n`);
    },
  },
  roster: {
    args: [0, 0],
    usage: "heddle roster",
    summary: "the enrolled roster and the Raft voters",
    async run(c, _p, v, io) {
      const r = (await c.roster()) as Json;
      return printJsonOr(io, v, r, () => `applied index ${r.appliedIndex}\n${table(["peer", "enrolled", "raft"], [...new Set<string>([...r.enrolled, ...r.raft.voters, ...r.raft.learners])].map((id) => [id, r.enrolled.includes(id), r.raft.voters.includes(id) ? (r.raft.leader === id ? "voter (leader)" : "voter") : "learner"]))}`);
    },
  },
  outcome: {
    args: [0, 0],
    usage: "heddle outcome --idempotency-key K | --client C --seq N",
    summary: "the recorded outcome of an earlier control call",
    options: { "idempotency-key": { type: "string" }, client: { type: "string" }, seq: { type: "string" } },
    async run(c, _p, v, io) {
      const key = v["idempotency-key"] as string | undefined;
      const client = v["client"] as string | undefined;
      const seq = v["seq"] as string | undefined;
      // one of the two ways, whole: the key alone, or client and seq together
      const byKey = key !== undefined && client === undefined && seq === undefined;
      if (!byKey && (key !== undefined || client === undefined || seq === undefined)) throw new UsageError(`usage: ${this.usage}`);
      if (client !== undefined && (client.length === 0 || client.length > 256)) throw new UsageError(`--client must be 1 … 256 characters, got ${client.length}`);
      if (seq !== undefined && !(/^[1-9][0-9]*$/.test(seq) && Number.isSafeInteger(Number(seq)))) throw new UsageError(`--seq must be an integer 1 … ${Number.MAX_SAFE_INTEGER}, got ${JSON.stringify(seq)}`);
      const q = key !== undefined ? { idempotencyKey: key } : { client: client!, seq: Number(seq) };
      const r = (await c.outcome(q)) as Json;
      return printJsonOr(io, v, r, () => outcomeText(r.outcome));
    },
  },
  "claims take": {
    args: [1, Infinity],
    usage: "heddle claims take KEY... --holder H [--shared] [--ttl MS] [--scope S] [--label L] [--idempotency-key K]",
    summary: "take claims, all or nothing (governed mode)",
    options: { holder: { type: "string" }, shared: { type: "boolean" }, ttl: { type: "string" }, scope: { type: "string" }, label: { type: "string" }, "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      if (p.length === 0 || v["holder"] === undefined) throw new UsageError(`usage: ${this.usage}`);
      const ttl = ttlArg(v["ttl"]);
      sized(v["holder"] as string, "--holder", MAX_ID_CHARS);
      if (p.length > MAX_TAKE_KEYS) throw new UsageError(`one take names at most ${MAX_TAKE_KEYS} keys, got ${p.length}: split it (a take is all or nothing, so split where that is acceptable)`);
      for (const key of p) sized(key, "KEY", MAX_CLAIM_KEY_CHARS);
      if (v["scope"] !== undefined) sized(v["scope"] as string, "--scope", MAX_ID_CHARS);
      if (v["label"] !== undefined && [...(v["label"] as string)].length > MAX_ID_CHARS) throw new UsageError(`--label must be at most ${MAX_ID_CHARS} characters, got ${[...(v["label"] as string)].length}`);
      const r = (await c.claimsTake(
        {
          holder: v["holder"] as string,
          resources: p.map((key) => ({ key, mode: v["shared"] ? ("shared" as const) : ("exclusive" as const) })),
          ...(ttl !== undefined ? { ttlMs: ttl } : {}),
          ...(v["scope"] !== undefined ? { scope: v["scope"] as string } : {}),
          ...(v["label"] !== undefined ? { label: v["label"] as string } : {}),
        },
        v["idempotency-key"] !== undefined ? { idempotencyKey: v["idempotency-key"] as string } : {},
      )) as Json;
      return printJsonOr(io, v, r, () => `${table(["key", "mode", "token"], (r.claims?.grants ?? []).map((g: Json) => [g.key, g.mode, g.token]))}granted mode: ${r.guarantee ?? ""}\n`);
    },
  },
  "claims release": {
    args: [1, 1],
    usage: "heddle claims release KEY --holder H [--fencing-token N] [--idempotency-key K]",
    summary: "release one claim (with --fencing-token: only the grant take gave that token)",
    // not --token: that is the daemon's bearer token (TARGET_OPTIONS)
    options: { holder: { type: "string" }, "fencing-token": { type: "string" }, "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      if (p.length !== 1 || v["holder"] === undefined) throw new UsageError(`usage: ${this.usage}`);
      sized(v["holder"] as string, "--holder", MAX_ID_CHARS);
      sized(p[0]!, "KEY", MAX_CLAIM_KEY_CHARS);
      const raw = v["fencing-token"] as string | undefined;
      const token = raw === undefined ? undefined : safeIntArg(raw, "--fencing-token");
      const r = (await c.claimsRelease(v["holder"] as string, p[0]!, {
        ...(token !== undefined ? { token } : {}),
        ...(v["idempotency-key"] !== undefined ? { idempotencyKey: v["idempotency-key"] as string } : {}),
      })) as Json;
      // the holder holds the key under another token: the grant named is gone and the newer one was left alone
      const newer = token !== undefined && r.claims !== true && typeof r.heldToken === "number";
      printJsonOr(io, v, r, () =>
        r.claims === true
          ? `released ${p[0]}${token !== undefined ? ` (token ${token})` : ""}\n`
          : newer
            ? `${v["holder"]} holds ${p[0]} under token ${r.heldToken}, not ${token}: nothing released (the newer grant stays)\n`
            : `${v["holder"]} did not hold ${p[0]}: nothing released\n`,
      );
      return newer ? EXIT.notYours : EXIT.ok;
    },
  },
  "claims renew": {
    args: [1, 1],
    usage: "heddle claims renew KEY --holder H",
    summary: "renew a lease",
    options: { holder: { type: "string" } },
    async run(c, p, v, io) {
      if (p.length !== 1 || v["holder"] === undefined) throw new UsageError(`usage: ${this.usage}`);
      sized(v["holder"] as string, "--holder", MAX_ID_CHARS);
      sized(p[0]!, "KEY", MAX_CLAIM_KEY_CHARS);
      const r = (await c.claimsRenew(v["holder"] as string, p[0]!)) as Json;
      printJsonOr(io, v, r, () => (r.claims === true ? `renewed ${p[0]}\n` : `${v["holder"]} does not hold ${p[0]} (or its lease lapsed): take it again\n`));
      // a loop such as `while heddle claims renew …; do work; done` must stop once the lease is gone
      return r.claims === true ? EXIT.ok : EXIT.notYours;
    },
  },
  "claims list": {
    args: [0, 1],
    usage: "heddle claims list [KEY]",
    summary: "open claims (or one key's holders)",
    async run(c, p, v, io) {
      if (p.length > 1) throw new UsageError(`usage: ${this.usage}`);
      const r = (await c.claimsList(p[0])) as Json;
      const foot = `granted mode: ${r.guarantee ?? ""}\n`;
      if (p[0] !== undefined) return printJsonOr(io, v, r, () => `${r.key}: ${r.holders.length === 0 ? "free" : r.holders.join(", ")}\n${foot}`);
      return printJsonOr(io, v, r, () => table(["key", "holder", "mode", "token", "since", "scope"], r.open.map((o: Json) => [o.key, o.holder, o.mode, o.token, typeof o.since === "number" ? when(o.since) : o.since, o.scope ?? "-"])) + foot);
    },
  },
  "claims keeper": {
    args: [1, 1],
    usage: "heddle claims keeper PART [--take] [--active] [--wrote-up-to N] [--check]",
    summary: "claim or renew this peer's keeper claim on a part and say who keeps it (keeper mode, gossiped)",
    options: { take: { type: "boolean" }, active: { type: "boolean" }, "wrote-up-to": { type: "string" }, check: { type: "boolean" } },
    async run(c, p, v, io) {
      const [part] = need(p, 1, this.usage);
      sized(part!, "PART", MAX_ITEM_CHARS);
      const upTo = v["wrote-up-to"] === undefined ? undefined : safeIntArg(v["wrote-up-to"] as string, "--wrote-up-to");
      const r = (await c.keeper(part!, { ...(v["take"] ? { take: true } : {}), ...(v["active"] ? { active: true } : {}), ...(upTo !== undefined ? { wroteUpTo: upTo } : {}) })) as Json;
      printJsonOr(io, v, r, () => keeperTable([r]));
      return v["check"] && r.mayAct !== true ? EXIT.notYours : EXIT.ok;
    },
  },
  "claims look": {
    args: [0, 1],
    usage: "heddle claims look [PART] [--check]",
    summary: "who keeps a part (or every configured part), without claiming (keeper mode)",
    options: { check: { type: "boolean" } },
    async run(c, p, v, io) {
      if (p.length > 1) throw new UsageError(`usage: ${this.usage}`);
      const r = (await c.keeperLook(p[0])) as Json;
      const rows: Json[] = p[0] === undefined ? r.parts : [r];
      printJsonOr(io, v, r, () => keeperTable(rows, r.guarantee));
      // --check asks "may this peer act on every part?": with no part configured there is nothing it may act on
      return v["check"] && (rows.length === 0 || !rows.every((x) => x.mayAct === true)) ? EXIT.notYours : EXIT.ok;
    },
  },
  "claims close": {
    args: [1, 1],
    usage: "heddle claims close PART [--wrote-up-to N]",
    summary: "close this peer's keeper claim on a part, saying how far it wrote (keeper mode)",
    options: { "wrote-up-to": { type: "string" } },
    async run(c, p, v, io) {
      const [part] = need(p, 1, this.usage);
      sized(part!, "PART", MAX_ITEM_CHARS);
      const upTo = v["wrote-up-to"] === undefined ? undefined : safeIntArg(v["wrote-up-to"] as string, "--wrote-up-to");
      const r = (await c.keeperClose(part!, upTo)) as Json;
      return printJsonOr(io, v, r, () => keeperTable([r]));
    },
  },
  "claims advisory": {
    args: [1, 1],
    usage: "heddle claims advisory ITEM [--ttl MS]",
    summary: "claim an item (advisory mode: best effort, the earliest claimant wins); exit 10 when another holds it",
    options: { ttl: { type: "string" } },
    async run(c, p, v, io) {
      const [item] = need(p, 1, this.usage);
      sized(item!, "ITEM", MAX_ITEM_CHARS);
      const ttl = ttlArg(v["ttl"]);
      const r = (await c.advisory(item!, ttl)) as Json;
      printJsonOr(io, v, r, () => advisoryTable([r], r.guarantee));
      return r.mine === true ? EXIT.ok : EXIT.notYours;
    },
  },
  "claims holders": {
    args: [0, 1],
    usage: "heddle claims holders [ITEM]",
    summary: "who holds an item (or every held item) and the duplicates (advisory mode)",
    async run(c, p, v, io) {
      if (p.length > 1) throw new UsageError(`usage: ${this.usage}`);
      const r = (await c.advisoryHolders(p[0])) as Json;
      if (p[0] !== undefined) return printJsonOr(io, v, r, () => advisoryTable([r], r.guarantee));
      // the list does not say which holder is this peer: ask the roster, for the table's "mine" column
      const self = v["json"] ? undefined : ((await c.peers()) as Json).peers.find((x: Json) => x.self === true)?.id;
      const rows = r.holders.map((h: Json) => ({ item: h.item, holder: h.holder, mine: self === undefined ? undefined : h.holder === self, duplicates: r.duplicates.filter((d: Json) => d.item === h.item) }));
      return printJsonOr(io, v, r, () => advisoryTable(rows, r.guarantee));
    },
  },
  "claims drop": {
    args: [1, 1],
    usage: "heddle claims drop ITEM",
    summary: "give up this peer's advisory claim on an item",
    async run(c, p, v, io) {
      const [item] = need(p, 1, this.usage);
      sized(item!, "ITEM", MAX_ITEM_CHARS);
      const r = (await c.advisoryDrop(item!)) as Json;
      return printJsonOr(io, v, r, () => (r.dropped ? `dropped ${item}\n` : `this peer had no claim on ${item}: nothing dropped\n`));
    },
  },
  "claims next": {
    args: [1, Infinity],
    usage: "heddle claims next ITEM...",
    summary: "this peer's order of tied work and the first item nobody else holds (advisory mode)",
    async run(c, p, v, io) {
      if (p.length === 0) throw new UsageError(`usage: ${this.usage}`);
      if (p.length > MAX_NEXT_ITEMS) throw new UsageError(`claims next takes at most ${MAX_NEXT_ITEMS} items, got ${p.length}: pass the first ${MAX_NEXT_ITEMS} of the tied work`);
      for (const item of p) sized(item, "ITEM", MAX_ITEM_CHARS);
      const r = (await c.advisoryNext(p)) as Json;
      printJsonOr(io, v, r, () => `${r.first === null ? "every item is held by another peer" : `next: ${r.first}`}\norder: ${r.order.join(" ")}\n`);
      return r.first === null ? EXIT.notYours : EXIT.ok;
    },
  },
  "leader transfer": {
    args: [1, 1],
    usage: "heddle leader transfer PEER_ID",
    summary: "hand Raft leadership to another voter (for rolling restarts)",
    async run(c, p, v, io) {
      const [to] = need(p, 1, this.usage);
      const r = (await c.transferLeader(to!)) as Json;
      return printJsonOr(io, v, r, () => `leader is now ${r.leader}\n`);
    },
  },
};

function edgeVerb(verb: string, call: (c: HeddleClient, edge: string, o: { idempotencyKey?: string }) => Promise<unknown>): ApiCommand {
  return {
    args: [1, 1],
    usage: `heddle ${verb} EDGE_ID [--idempotency-key K]`,
    summary: `${verb} an edge (governed mode)`,
    options: { "idempotency-key": { type: "string" } },
    async run(c, p, v, io) {
      const [edge] = need(p, 1, this.usage);
      const r = (await call(c, edge!, v["idempotency-key"] !== undefined ? { idempotencyKey: v["idempotency-key"] as string } : {})) as Json;
      return printJsonOr(io, v, r, () => appliedLine(`${verb} ${edge}`, r));
    },
  };
}

/** Longest `Idempotency-Key` the daemon accepts (the daemon's MAX_IDEMPOTENCY_KEY_LENGTH). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 200;

/** Refuses an `--idempotency-key` the daemon would refuse, or that cannot be sent as an HTTP header at all. */
function checkIdempotencyKey(k: string | boolean | undefined): void {
  if (typeof k !== "string") return;
  if (k.length === 0 || k.length > MAX_IDEMPOTENCY_KEY_LENGTH || !/^[\x21-\x7e]+$/.test(k)) {
    throw new UsageError(
      `--idempotency-key must be 1 … ${MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters (letters, digits, punctuation; no spaces or accents), got ${JSON.stringify(k.length > 60 ? `${k.slice(0, 60)}…` : k)} (${k.length} characters)`,
    );
  }
}

/**
 * The peer id of the daemon `c` talks to. A keyed mint or enroll names its holder (replica) rather than leave it to
 * default to the receiving peer: the daemon refuses a keyed call that leaves it out, since a retry of it through
 * another peer would be another act.
 */
async function selfId(c: HeddleClient): Promise<string> {
  const self = ((await c.status()) as { self?: unknown }).self;
  if (typeof self !== "string") throw new Error(`${c.url}/v1/status named no peer id (self) to send as the holder; name it yourself (--holder PEER_ID, or enroll's PEER_ID)`);
  return self;
}

/** Runs API command `name` on `argv`. */
export async function runApiCommand(name: string, argv: string[], io: Io): Promise<number> {
  const cmd = API_COMMANDS[name]!;
  const { values, positionals, client } = parseApiArgs(argv, cmd.options ?? {});
  if (values["help"]) {
    io.out(`${cmd.usage}\n\n${cmd.summary}\n\n${TARGET_HELP}\n  --json                print the API's JSON instead of a table\n`);
    return EXIT.ok;
  }
  const [min, max] = cmd.args;
  if (positionals.length > max) {
    const extra = positionals.slice(max);
    throw new UsageError(`unexpected argument${extra.length > 1 ? "s" : ""} ${extra.map((x) => JSON.stringify(x)).join(" ")} (usage: ${cmd.usage})`);
  }
  if (positionals.length < min) throw new UsageError(`usage: ${cmd.usage}`);
  checkIdempotencyKey(values["idempotency-key"]);
  return withClient(client, (c) => cmd.run(c, positionals, values, io));
}
