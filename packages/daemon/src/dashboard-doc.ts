// The Yjs document the dashboard syncs: one top-level map per section, one nested map per entity, one field
// per value. Writing a snapshot touches only the fields whose value changed (and the entities that came or
// went), in one transaction, so every Yjs update the browsers receive is as small as the change itself.
import * as Y from "yjs";
import type { DashboardSnapshot, Fields, Scalar } from "./dashboard-snapshot.ts";

/** Version of the document's layout; the page refuses a document of another version. */
export const DASHBOARD_DOC_VERSION = 1;
/** Most recent events kept in the document's `events` array (oldest dropped first). */
export const MAX_DASHBOARD_EVENTS = 50;

/** Sections holding one entity per key (each a nested `Y.Map`). */
export const ENTITY_SECTIONS = ["edges", "groups", "bounds", "peers", "claims"] as const;
/** Sections holding fields directly. */
export const FLAT_SECTIONS = ["node", "rejected", "raft"] as const;

/** One line of the recent-events list: conflicts, rejected frames, liveness and leadership changes. */
export interface DashboardEvent {
  /** Daemon clock, ms. */
  readonly at: number;
  readonly kind: "conflict" | "conflict-cleared" | "rejected" | "liveness" | "leader";
  readonly text: string;
}

function writeFields(m: Y.Map<Scalar>, next: Fields): void {
  for (const [k, v] of Object.entries(next)) if (m.get(k) !== v) m.set(k, v);
  for (const k of [...m.keys()]) if (!(k in next)) m.delete(k);
}

/** The Yjs side of the dashboard: a document and the writer that keeps it equal to the latest snapshot. */
export class DashboardDoc {
  /** The document browsers sync (read-only for them). */
  readonly doc = new Y.Doc();
  #eventsWritten = 0;

  constructor() {
    this.doc.getMap<Scalar>("meta").set("version", DASHBOARD_DOC_VERSION);
  }

  /** Makes the document equal `s`; one transaction, touching only what differs. */
  write(s: DashboardSnapshot): void {
    this.doc.transact(() => {
      for (const name of FLAT_SECTIONS) writeFields(this.doc.getMap<Scalar>(name), s[name]);
      for (const name of ENTITY_SECTIONS) {
        const section = this.doc.getMap<Y.Map<Scalar>>(name);
        const next = s[name];
        for (const [key, fields] of next) {
          let m = section.get(key);
          if (m === undefined) {
            m = new Y.Map<Scalar>();
            section.set(key, m);
          }
          writeFields(m, fields);
        }
        for (const key of [...section.keys()]) if (!next.has(key)) section.delete(key);
      }
    });
  }

  /**
   * Appends the events of `log` not written yet (`log` holds every event ever noted, as `{seq, event}` with a
   * rising `seq`), and drops the oldest beyond {@link MAX_DASHBOARD_EVENTS}.
   */
  writeEvents(log: readonly { seq: number; event: DashboardEvent }[]): void {
    const fresh = log.filter((x) => x.seq > this.#eventsWritten);
    if (fresh.length === 0) return;
    this.doc.transact(() => {
      const a = this.doc.getArray<DashboardEvent>("events");
      a.push(fresh.slice(-MAX_DASHBOARD_EVENTS).map((x) => x.event));
      if (a.length > MAX_DASHBOARD_EVENTS) a.delete(0, a.length - MAX_DASHBOARD_EVENTS);
    });
    this.#eventsWritten = fresh[fresh.length - 1]!.seq;
  }

  /** The document as plain values (tests, and the page's own reading of it). */
  toJSON(): Record<string, unknown> {
    return this.doc.toJSON();
  }

  destroy(): void {
    this.doc.destroy();
  }
}
