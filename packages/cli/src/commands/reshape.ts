// `heddle reshape`: reparent a group or change its weight as one command, running governed.md §3.7's
// recipe through the API — prepare the new generation, close the old, wait for it to drain on every
// replica, retire it, activate the new — with a progress line while it drains. Every step carries an
// Idempotency-Key derived from the new edge, so running the same command again resumes where it stopped.
import { createHash } from "node:crypto";
import { ApiError, type HeddleClient } from "@heddle/client";
import { EXIT, UsageError } from "../exit-codes.ts";
import { parseApiArgs } from "./api-commands.ts";
import type { Io } from "./io.ts";
import { TARGET_HELP } from "../target.ts";

type Json = Record<string, any>;

export const RESHAPE_HELP = `heddle reshape — attach, reparent or re-weight a group (governed mode)

Usage: heddle reshape CHILD [--parent P] [--weight W] [--drain-timeout S] [--json]

  CHILD not attached yet:  prepare P→CHILD and activate it (a new child; --parent defaults to the root)
  CHILD attached by eA:    prepare eB (the new parent and/or weight), close eA, wait until eA is drained
                           on every replica (a progress line shows what is still outstanding), retire eA,
                           activate eB (governed.md §3.7)
  --weight W               an integer or a fraction such as 3/2 (default: unchanged, or 1 for a new child)
  --drain-timeout S        give up waiting for the drain after S seconds (default 120); the command can be
                           run again to resume

Running the same command again resumes an interrupted run (while the old edge drains, or after it was retired)
and, once the child hangs as asked, answers that nothing is left to change (exit 0).

Exit 0 when the new edge is active (or already was); 3 when a step is refused or conflicts (e.g. another reshape of the same
child won: dualInbound); 6 when the drain did not finish in time.

${TARGET_HELP}
`;

/** The edge id of generation `g` of `parent → child` (the node's edgeId form). */
function generationId(parent: string, child: string, g: number): string {
  return `${parent}→${child}${g === 1 ? "" : `@${g}`}`;
}

function sameWeight(a: string, b: string): boolean {
  const [an, ad] = a.split("/").map(BigInt) as [bigint, bigint?];
  const [bn, bd] = b.split("/").map(BigInt) as [bigint, bigint?];
  return an * (bd ?? 1n) === bn * (ad ?? 1n);
}

async function step(io: Io, what: string, f: () => Promise<unknown>): Promise<Json> {
  const r = (await f()) as Json;
  io.err(`  ${what}: applied${r.noop ? " (already so)" : ""} at index ${r.index}\n`);
  return r;
}

/** `heddle reshape` */
export async function reshapeCommand(argv: string[], io: Io): Promise<number> {
  const { values: v, positionals, client } = parseApiArgs(argv, { parent: { type: "string" }, weight: { type: "string" }, "drain-timeout": { type: "string" } });
  if (v["help"]) return io.out(RESHAPE_HELP), EXIT.ok;
  if (positionals.length !== 1) throw new UsageError("usage: heddle reshape CHILD [--parent P] [--weight W] [--drain-timeout S]");
  const child = positionals[0]!;
  const weightArg = v["weight"] as string | undefined;
  if (weightArg !== undefined && !/^[1-9][0-9]*(\/[1-9][0-9]*)?$/.test(weightArg)) throw new UsageError("--weight must be a positive integer or fraction, e.g. 3 or 3/2");
  const drainTimeoutMs = Number(v["drain-timeout"] ?? "120") * 1000;
  if (!Number.isFinite(drainTimeoutMs) || drainTimeoutMs <= 0) throw new UsageError("--drain-timeout must be a positive number of seconds");
  const c = client();
  try {
    return await reshape(c, io, { child, parent: v["parent"] as string | undefined, weight: weightArg, drainTimeoutMs, json: v["json"] === true });
  } finally {
    c.close();
  }
}

/** The recipe itself, on a client (exported for tests and scripts). */
export async function reshape(c: HeddleClient, io: Io, o: { child: string; parent: string | undefined; weight: string | undefined; drainTimeoutMs: number; json: boolean }): Promise<number> {
  const tree = (await c.tree()) as Json;
  const group = (tree.groups as Json[]).find((g) => g.group === o.child);
  const edges = new Map<string, Json>((tree.edges as Json[]).map((e) => [e.id, e]));
  const intoChild = [...edges.values()].filter((e) => e.child === o.child);
  const fits = (e: Json) => (o.parent === undefined || e.parent === o.parent) && (o.weight === undefined || sameWeight(e.weight, o.weight));
  // The edge being replaced: the child's ACTIVE inbound edge (at most one: a second is a dualInbound
  // conflict) — read from the edges, not the lineage, which is null while the tree hangs under no mint; or,
  // when an earlier run was interrupted while it drained, the one CLOSING. (Once it is RETIRED, the run is
  // resumed from the new generation it PREPARED.)
  const active = intoChild.find((e) => e.lifecycle === "ACTIVE");
  const closing = intoChild.filter((e) => e.lifecycle === "CLOSING");
  const oldId: string | null = active?.id ?? group?.inbound ?? (closing.length === 1 ? closing[0]!.id : null);
  const old = oldId === null ? null : edges.get(oldId)!;
  let parent: string;
  let weight: string;
  if (old === null) {
    // No edge to replace. A PREPARED generation of the child that fits the options is an interrupted run's
    // (it retired the old edge but did not activate this one): resume with its parent and weight, never
    // fall back to the root under it.
    const prepared = intoChild.filter((e) => e.lifecycle === "PREPARED" && fits(e));
    const retired = intoChild.some((e) => e.lifecycle === "RETIRED");
    if (prepared.length > 1 && retired) {
      throw new UsageError(`${o.child} has ${prepared.length} prepared generations (${prepared.map((e) => e.id).join(", ")}) and no live inbound edge; say which with --parent and --weight`);
    }
    if (prepared.length === 1 && retired) {
      parent = prepared[0]!.parent;
      weight = prepared[0]!.weight;
    } else {
      parent = o.parent ?? tree.root;
      weight = o.weight ?? "1";
    }
  } else {
    parent = o.parent ?? old.parent;
    weight = o.weight ?? old.weight;
  }
  if (old !== null && old.lifecycle === "ACTIVE" && old.parent === parent && sameWeight(old.weight, weight)) {
    // Already as asked (a second run, or a retry after a lost answer): done, not a mistake.
    const result = { child: o.child, old: null, new: oldId, parent, weight, index: null, unchanged: true };
    io.out(o.json ? `${JSON.stringify(result)}\n` : `${o.child} already hangs under ${parent} with weight ${weight} (edge ${oldId}): nothing to change\n`);
    return EXIT.ok;
  }
  if (old !== null && old.lifecycle === "CLOSING" && old.parent === parent && sameWeight(old.weight, weight)) {
    throw new UsageError(`${oldId} (under ${parent}, weight ${weight}) is closing: it cannot be reopened; reshape ${o.child} to another parent or weight`);
  }
  // The new generation: a PREPARED edge of this shape left by an earlier, interrupted run; else the first free id.
  let newId: string | null = null;
  for (const e of edges.values()) {
    if (e.lifecycle === "PREPARED" && e.parent === parent && e.child === o.child && sameWeight(e.weight, weight)) newId = e.id;
  }
  for (let g = 1; newId === null; g++) if (!edges.has(generationId(parent, o.child, g))) newId = generationId(parent, o.child, g);
  // Keys name the new edge by a digest: edge ids may hold characters a header cannot (→).
  const edgeTag = (id: string) => createHash("sha256").update(id).digest("hex").slice(0, 24);
  const key = (s: string) => ({ idempotencyKey: `reshape:${edgeTag(newId!)}:${s}` });
  const w = /^[0-9]+$/.test(weight) ? Number(weight) : weight;
  io.err(old === null ? `attaching ${o.child} under ${parent} (weight ${weight}) as ${newId}\n` : `reshaping ${o.child}: ${oldId} (under ${old.parent}, weight ${old.weight}) → ${newId} (under ${parent}, weight ${weight})\n`);
  try {
    await step(io, `prepare ${newId}`, () => c.prepare({ id: newId!, parent, child: o.child, weight: w }, key("prepare")));
    if (old !== null) {
      await step(io, `close ${oldId}`, () => c.closeEdge(oldId!, key(`close:${edgeTag(oldId!)}`)));
      const started = Date.now();
      let attempt = 0;
      for (;;) {
        const e = (await c.edge(oldId!)) as Json;
        const positions = Object.entries(e.positions as Record<string, string>);
        if (e.lifecycle === "RETIRED") break;
        if (positions.length === 0) {
          try {
            await step(io, `retire ${oldId}`, () => c.retire(oldId!, key(`retire:${edgeTag(oldId!)}:${++attempt}`)));
            break;
          } catch (x) {
            // Drained on our view but not (yet) on the proposer's: wait for gossip and try again.
            if (!(x instanceof ApiError && x.status === 409 && x.body.conflict?.reason === "notDrained")) throw x;
          }
        } else {
          const outstanding = positions.reduce((s, [, p]) => s + BigInt(p), 0n);
          const line = `  draining ${oldId}: ${outstanding} outstanding across ${positions.length} replica(s), ${((Date.now() - started) / 1000).toFixed(0)} s`;
          io.err(io.tty ? `\r${line}\x1b[K` : `${line}\n`);
        }
        if (Date.now() - started > o.drainTimeoutMs) {
          // say who holds what: entitlement held under a closed edge drains only as its holder spends it (v1 nodes
          // return nothing unused, node.md §17) — so re-running alone does not help while it sits there unspent
          const who = positions.map(([replica, p]) => `${replica.length > 16 ? `${replica.slice(0, 12)}…` : replica} holds ${p}`).join(", ");
          io.err(
            `\nheddle reshape: ${oldId} did not drain within ${o.drainTimeoutMs / 1000} s (${who}). It drains as each holder spends what it holds under ${o.child}: ` +
              `its open reservations there must complete (heddle reservations on that peer lists them), and what is left unreserved is spent only by more work at ${o.child}'s leaves; ` +
              `then run the same command again to resume (the steps done so far are not repeated)\n`,
          );
          return EXIT.unknown;
        }
        await new Promise((r) => setTimeout(r, io.tty ? 250 : 1000));
      }
      if (io.tty) io.err("\n");
    }
    const r = await step(io, `activate ${newId}`, () => c.activate(newId!, key("activate")));
    const result = { child: o.child, old: oldId, new: newId, parent, weight, index: r.index };
    io.out(o.json ? `${JSON.stringify(result)}\n` : `${o.child} now hangs under ${parent} with weight ${weight} (edge ${newId})${oldId !== null ? `; ${oldId} is retired` : ""}\n`);
    return EXIT.ok;
  } catch (x) {
    if (x instanceof ApiError && x.status === 409 && x.body.conflict?.reason === "dualInbound") {
      io.err(`heddle reshape: another generation of ${o.child} became live first (${String(x.body.conflict["incumbent"])}); ${newId} stays prepared and unused\n`);
    }
    throw x;
  }
}
