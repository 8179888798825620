// The dashboard document's writer, model-based: random sequences of snapshots written one after another; a
// replica that only ever receives the writer's incremental updates must equal the last snapshot after each
// step, a write that changes nothing must send nothing, and an update must not grow with the document.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import * as Y from "yjs";
import { DashboardDoc, MAX_DASHBOARD_EVENTS, type DashboardEvent } from "../src/dashboard-doc.ts";
import type { DashboardSnapshot, Fields } from "../src/dashboard-snapshot.ts";

const RUNS = Number(process.env["HEDDLE_RUNS"] ?? 500);
const SEED = process.env["HEDDLE_SEED"] === undefined ? undefined : Number(process.env["HEDDLE_SEED"]);

const scalar = fc.oneof(fc.string({ maxLength: 6 }), fc.integer({ min: -5, max: 1000 }), fc.boolean(), fc.constant(null));
const fields = fc.dictionary(fc.constantFrom("a", "b", "c", "d"), scalar, { maxKeys: 4 });
const entities = fc.dictionary(fc.constantFrom("e1", "e2", "e3", "e4", "e5"), fields, { maxKeys: 5 }).map((o) => new Map(Object.entries(o)));
const snapshot: fc.Arbitrary<DashboardSnapshot> = fc.record({
  node: fields,
  rejected: fields,
  raft: fields,
  edges: entities,
  groups: entities,
  bounds: entities,
  peers: entities,
  claims: entities,
});

function plain(s: DashboardSnapshot): Record<string, unknown> {
  const m = (x: ReadonlyMap<string, Fields>) => Object.fromEntries([...x].map(([k, v]) => [k, { ...v }]));
  return { node: s.node, rejected: s.rejected, raft: s.raft, edges: m(s.edges), groups: m(s.groups), bounds: m(s.bounds), peers: m(s.peers), claims: m(s.claims) };
}

/** What a reader of the document sees (top-level types show once the reader names them, as the page does). */
function view(d: Y.Doc): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of ["node", "rejected", "raft", "edges", "groups", "bounds", "peers", "claims"]) out[k] = d.getMap(k).toJSON();
  return out;
}

describe("the dashboard document", () => {
  it("a replica fed only the writer's updates equals every snapshot written; no change, no update", () => {
    fc.assert(
      fc.property(fc.array(snapshot, { minLength: 1, maxLength: 12 }), (snaps) => {
        const w = new DashboardDoc();
        const replica = new Y.Doc();
        Y.applyUpdate(replica, Y.encodeStateAsUpdate(w.doc));
        const updates: Uint8Array[] = [];
        w.doc.on("update", (u: Uint8Array) => {
          updates.push(u);
          Y.applyUpdate(replica, u);
        });
        for (const s of snaps) {
          const before = updates.length;
          w.write(s);
          expect(updates.length - before).toBeLessThanOrEqual(1); // one transaction, at most one update
          expect(view(replica)).toEqual(plain(s));
          w.write(s);
          expect(updates.length - before).toBeLessThanOrEqual(1); // writing the same again sends nothing
        }
        w.destroy();
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) },
    );
  });

  it("a one-field change is one small update, however large the document", () => {
    const w = new DashboardDoc();
    const edges = new Map<string, Fields>();
    for (let i = 0; i < 1000; i++) edges.set(`edge-${i}`, { parent: "root", child: `g${i}`, weight: "1", committed: String(i * 10), spent: String(i) });
    const base: DashboardSnapshot = { node: { self: "p" }, rejected: {}, raft: {}, edges, groups: new Map(), bounds: new Map(), peers: new Map(), claims: new Map() };
    w.write(base);
    const size = Y.encodeStateAsUpdate(w.doc).byteLength;
    let update: Uint8Array | null = null;
    w.doc.on("update", (u: Uint8Array) => (update = u));
    const changed = new Map(edges);
    changed.set("edge-500", { ...edges.get("edge-500")!, spent: "123456" });
    w.write({ ...base, edges: changed });
    expect(update).not.toBeNull();
    expect(size).toBeGreaterThan(30_000);
    expect(update!.byteLength).toBeLessThan(64);
  });

  it("keeps the last MAX_DASHBOARD_EVENTS events, each written once", () => {
    const w = new DashboardDoc();
    const log: { seq: number; event: DashboardEvent }[] = [];
    for (let i = 1; i <= MAX_DASHBOARD_EVENTS + 30; i++) {
      log.push({ seq: i, event: { at: i, kind: "rejected", text: `frame ${i}` } });
      if (i % 7 === 0) w.writeEvents(log);
    }
    w.writeEvents(log);
    w.writeEvents(log);
    const a = w.doc.getArray<DashboardEvent>("events").toArray();
    expect(a.length).toBe(MAX_DASHBOARD_EVENTS);
    expect(a.map((e) => e.at)).toEqual(log.slice(-MAX_DASHBOARD_EVENTS).map((x) => x.event.at));
  });
});
