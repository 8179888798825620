/**
 * What one mint costs as the mints already applied grow (governed.md §3.11: an apply step is bounded — one command,
 * one cycle walk — so its cost must not follow the number of mints before it). Prints, at 1k/2k/4k/8k mints already
 * held, the mean cost of one step over the last `WINDOW` steps before that size:
 *
 * - `ControlState.apply` of one `mint` entry (the control plane's apply step, replay included);
 * - `EntitlementLedger.join` of one mint patch into a value holding n mints (the immutable value's join);
 * - `LedgerReplica.merge` of the same patch (the mutable replica: in place, O(patch));
 * - the data plane's `controlSink().publish` of the mint patch on a `heddleStatic` node (memory store, virtual timers).
 *
 * A cost that stays flat down a column is O(1) per mint; one that doubles with n is O(mints so far), so replay of a
 * log of n mints is quadratic; the last column is the whole run (a replay of MAX_MINTS mints, for the first row). Prints
 * figures; asserts nothing about time.
 *
 *   npx -y pnpm@10 --filter @heddle/governed exec node bench/mint-apply.ts
 *   HEDDLE_BENCH_MINTS=16000 npx -y pnpm@10 --filter @heddle/governed exec node bench/mint-apply.ts
 */
import { EntitlementLedger, GroupId, LedgerReplica, MintId, ReplicaId } from "@heddle/ledger";
import { heddleStatic, memoryStore, MemoryNetwork, seededRandom } from "@heddle/node";
import { VirtualTimers } from "@heddle/node/testing";
import { ControlState, encodeEnvelope } from "../src/index.ts";

const MAX_MINTS = Number(process.env.HEDDLE_BENCH_MINTS ?? 8_000);
if (!Number.isSafeInteger(MAX_MINTS) || MAX_MINTS < 1_000 || MAX_MINTS > 1_000_000) {
  throw new Error(`HEDDLE_BENCH_MINTS: ${process.env.HEDDLE_BENCH_MINTS} is not a whole number of mints in [1000, 1000000]`);
}
/** Steps averaged at each reported size. */
const WINDOW = 200;
const SIZES = [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000].filter((n) => n <= MAX_MINTS);
const ROOT = GroupId("root");
const HOLDER = ReplicaId("n1");

/** Runs `step(i)` for i = 1…MAX_MINTS: the mean µs of the WINDOW steps ending at each size, then the total ms. */
function perStep(step: (i: number) => void): number[] {
  const ns: number[] = new Array(MAX_MINTS + 1).fill(0);
  for (let i = 1; i <= MAX_MINTS; i++) {
    const t0 = process.hrtime.bigint();
    step(i);
    ns[i] = Number(process.hrtime.bigint() - t0);
  }
  const mean = SIZES.map((n) => ns.slice(n - WINDOW + 1, n + 1).reduce((a, b) => a + b, 0) / WINDOW / 1000);
  return [...mean, ns.reduce((a, b) => a + b, 0) / 1e6];
}

function mintPatch(i: number): EntitlementLedger {
  const r = EntitlementLedger.EMPTY.mint(MintId(`mint:bench:${i}`), ROOT, HOLDER, 1n);
  if (!r.ok) throw new Error(`bench setup refused: ${r.refusal.message}`);
  return r.patch;
}

const patches = Array.from({ length: MAX_MINTS + 1 }, (_, i) => (i === 0 ? EntitlementLedger.EMPTY : mintPatch(i)));

const state = new ControlState({ root: ROOT });
const entries = Array.from({ length: MAX_MINTS + 1 }, (_, i) => {
  const key = { client: "bench", seq: i };
  const command = encodeEnvelope({ v: 1, key, ackFloor: i, proposer: HOLDER, cmd: { op: "mint", holder: HOLDER, amount: 1n } });
  return { kind: "entry" as const, entry: { index: i, term: 1, kind: "app" as const, key, command, stampedAt: 0 } };
});
const control = perStep((i) => void state.apply(entries[i]!));

let value = EntitlementLedger.EMPTY;
const valueJoin = perStep((i) => void (value = value.join(patches[i]!)));

const replica = new LedgerReplica(EntitlementLedger.EMPTY);
const replicaMerge = perStep((i) => void replica.merge(patches[i]!));

const timers = new VirtualTimers();
const net = new MemoryNetwork({ timers, random: seededRandom(1) });
const node = heddleStatic({
  seam: net.join("n1"),
  self: HOLDER,
  root: ROOT,
  supply: new Map([[HOLDER, 1n]]),
  topology: [],
  config: { policy: { quantum: 10n }, maxHoldingsPerPeer: 1_000n, timers, random: seededRandom(2), store: memoryStore() },
});
const sink = node.controlSink();
const publish = perStep((i) => sink.publish(patches[i]!));
await node.shutdown();

console.log(`mint apply cost — node ${process.version}, ${new Date().toISOString()}, mean µs per step over the ${WINDOW} steps before n mints`);
const cell = (s: string, i: number) => (i === 0 ? s.padEnd(52) : s.padStart(12));
console.log(["n mints already held", ...SIZES.map(String), "all, ms"].map(cell).join(""));
for (const [what, us] of [
  ["ControlState.apply(mint entry)", control],
  ["EntitlementLedger.join(mint patch)", valueJoin],
  ["LedgerReplica.merge(mint patch)", replicaMerge],
  ["data plane controlSink().publish(mint patch)", publish],
] as const) {
  console.log([what, ...us.map((x) => x.toFixed(2))].map(cell).join(""));
}
