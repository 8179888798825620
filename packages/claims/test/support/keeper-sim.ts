// Seeded simulation of keeper mode over a lossy, delaying link (see keeper-simulation.test.ts).
import { closeKeeper, keeperState, lookKeeper, receiveKeeperSlot, renewKeeper } from "../../src/index.ts";
import type { KeeperSlot, KeeperState } from "../../src/index.ts";

const RULES = { reminders: "follows-you", invoices: "stays-put" } as const;
export const PARTS = ["reminders", "invoices"] as const;
const MINUTE = 60_000;

/** mulberry32: a small seeded generator, so a seed replays a run exactly. */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

interface Delivery {
  at: number;
  to: number;
  from: number;
  slot: KeeperSlot;
}

/** What the simulation varies besides loss and delay. */
export interface SimOptions {
  /**
   * Now and then the link splits the machines in two groups for 2 min to 2 h (well inside `UNCLOSED`): nothing
   * crosses between the groups until it heals. Peers that cannot hear each other may then both act (claims.md §3
   * promises agreement only between peers that have heard each other), so the run checks `sure` instead of `mayAct`.
   */
  readonly partitions?: boolean;
}

/**
 * Runs `hours` of simulated time for `peers` machines; throws (naming the seed) if two act at once — or, with
 * partitions, if two are `sure` at once. `acted` counts, per part, the looks at which one peer might act
 * (`mayAct`); `sure` those at which one was sure.
 */
export function simulate(
  seed: number,
  peers: number,
  hours: number,
  options: SimOptions = {},
): { acted: Record<string, number>; sure: Record<string, number>; cutMs: number } {
  const random = rng(seed);
  const names = Array.from({ length: peers }, (_, i) => `machine-${i}`);
  const states: KeeperState[] = names.map((self) => keeperState({ self, epoch: 1, rules: RULES }));
  const phase = names.map(() => Math.floor(random() * 60) * 1_000);
  const running = names.map(() => true);
  const lostLast = names.map(() => names.map(() => false));
  let inFlight: Delivery[] = [];
  let personAt = 0;
  const acted: Record<string, number> = { reminders: 0, invoices: 0 };
  const sure: Record<string, number> = { reminders: 0, invoices: 0 };
  // the side of the current split each machine is on, and when the split heals (none while `healsAt` ≤ now)
  let side = names.map(() => 0);
  let healsAt = 0;
  let cutMs = 0;
  const cut = (from: number, to: number, now: number): boolean => now < healsAt && side[from] !== side[to];
  // Whether `viewer` holds no open copy of `peer`'s claim on `part` — it never got one, or last saw the peer close
  // it — while `peer` has the claim open. Nobody can wait for a claim it never saw, and a close says the peer stopped
  // (claims.md §3: agreement only between peers that have heard each other; a closed claim holds nothing), so the
  // partition check excuses two peers sure at once only when one is unknown to the other in this way.
  const unknownTo = (viewer: string, peer: string, part: string): boolean => {
    const seen = states[names.indexOf(viewer)]?.slots.get(peer)?.claims.find((c) => c.part === part);
    const own = states[names.indexOf(peer)]?.slots.get(peer)?.claims.find((c) => c.part === part);
    return (seen === undefined || seen.closedAt !== undefined) && own !== undefined && own.closedAt === undefined;
  };

  const broadcast = (from: number, slot: KeeperSlot, now: number): void => {
    for (let to = 0; to < peers; to++) {
      if (to === from || cut(from, to, now)) continue;
      // lost at most once in a row per link: the next renewal repairs it
      const lose = !(lostLast[from]?.[to] ?? false) && random() < 0.35;
      (lostLast[from] as boolean[])[to] = lose;
      if (!lose) inFlight.push({ at: now + Math.floor(random() * 5_000), to, from, slot });
    }
  };
  const write = (i: number, out: { state: KeeperState; slot: KeeperSlot }, now: number): void => {
    states[i] = out.state;
    broadcast(i, out.slot, now);
  };

  const end = hours * 60 * MINUTE;
  for (let now = 0; now <= end; now += 1_000) {
    // deliveries due by now, in time order
    const due = inFlight.filter((d) => d.at <= now).sort((a, b) => a.at - b.at);
    inFlight = inFlight.filter((d) => d.at > now);
    for (const d of due) {
      if (!running[d.to] || cut(d.from, d.to, now)) continue;
      states[d.to] = receiveKeeperSlot(states[d.to] as KeeperState, names[d.from] as string, d.slot, now).state;
    }
    if (options.partitions === true && now % 10_000 === 0 && now >= healsAt && random() < 0.003) {
      const split = names.map(() => (random() < 0.5 ? 1 : 0));
      split[0] = 0;
      split[1] = 1; // both sides non-empty
      side = split;
      healsAt = now + 2 * MINUTE + Math.floor(random() * 118) * MINUTE;
    }
    if (now < healsAt) cutMs += 1_000;
    // the person moves now and then, and sometimes takes invoices on purpose where they are
    if (now % 10_000 === 0 && random() < 0.01) personAt = Math.floor(random() * peers);
    if (now % 10_000 === 0 && random() < 0.004 && running[personAt]) {
      write(personAt, renewKeeper(states[personAt] as KeeperState, "invoices", now, { take: true, active: now }), now);
    }
    // a machine quits (closing its claims) or comes back now and then
    if (now % 10_000 === 0 && random() < 0.003) {
      const i = Math.floor(random() * peers);
      if (running[i]) {
        for (const part of PARTS) write(i, closeKeeper(states[i] as KeeperState, part, now, now), now);
        running[i] = false;
      } else running[i] = true; // it renews (reopens) at its next phase
    }
    for (let i = 0; i < peers; i++) {
      if (!running[i] || now % MINUTE !== phase[i]) continue;
      for (const part of PARTS) {
        const active = personAt === i ? now : undefined;
        write(i, renewKeeper(states[i] as KeeperState, part, now, active === undefined ? {} : { active }), now);
      }
    }
    // everyone looks every ten seconds: at most one may act on each part
    if (now % 10_000 === 0) {
      for (const part of PARTS) {
        const acting: string[] = [];
        const certain: string[] = [];
        for (let i = 0; i < peers; i++) {
          if (!running[i]) continue;
          const look = lookKeeper(states[i] as KeeperState, part, now);
          states[i] = look.state;
          if (look.view.mayAct) acting.push(names[i] as string);
          if (look.view.sure) certain.push(names[i] as string);
        }
        if (options.partitions !== true && acting.length > 1) {
          throw new Error(`seed ${seed}: at ${now} ms ${acting.join(" and ")} both act on ${part}`);
        }
        const both = certain.flatMap((p, i) => certain.slice(i + 1).map((q) => [p, q] as const));
        const clash = both.find(([p, q]) => !unknownTo(q, p, part) && !unknownTo(p, q, part));
        if (clash !== undefined) throw new Error(`seed ${seed}: at ${now} ms ${clash.join(" and ")} are both sure of ${part}`);
        if (acting.length >= 1) acted[part] = (acted[part] ?? 0) + 1;
        if (certain.length === 1) sure[part] = (sure[part] ?? 0) + 1;
      }
    }
  }
  return { acted, sure, cutMs };
}

