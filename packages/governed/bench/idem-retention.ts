/**
 * What `idem:` retention saves (governed README, "Idempotency-key retention"): a control log of keyed calls as
 * the daemon makes them (each its own `idem:` client, seq 1; enrolls, claims releases and renews),
 * folded into a `ControlState` with no effective window and with a window of W entries. Prints the snapshot size,
 * the CPU time of `ControlState.decode` (median of several rounds, process CPU seconds, so other load on the
 * machine counts less than in wall time) and of `encode`, and the CPU time of folding the log (pruning included).
 *
 *   node packages/governed/bench/idem-retention.ts [calls=14000] [windows=2000,10000,100000] [rounds=7]
 */
import { GroupId, ReplicaId } from "@heddle/ledger";
import { ControlState, encodeEnvelope } from "../src/index.ts";
import type { Committed, ControlCommand } from "../src/index.ts";

const calls = Number(process.argv[2] ?? 14_000);
const windows = (process.argv[3] ?? "2000,10000,100000").split(",").map(Number);
const rounds = Number(process.argv[4] ?? 7);
const root = GroupId("root");
const claims = {};

// Commands whose only lasting trace is the session record (a noop enroll, a release of nothing, a take refused as
// invalid), so the figures are of the sessions alone: mints, edges and claims stay in the state whatever the window.
function command(i: number): ControlCommand {
  switch (i % 3) {
    case 0:
      return { op: "enroll", replica: ReplicaId("peer-0") };
    case 1:
      return { op: "claims.release", holder: `worker-${i}`, key: `job-${i}` };
    default:
      return { op: "claims.renew", holder: `worker-${i}`, key: `job-${i}` };
  }
}

const log: Committed[] = [];
for (let i = 1; i <= calls; i++) {
  // the daemon's mapping: sha256 hex prefix of the header, 32 characters
  const key = { client: `idem:${i.toString(16).padStart(32, "0")}`, seq: 1 };
  const bytes = encodeEnvelope({ v: 1, key, ackFloor: 0, proposer: ReplicaId(`peer-${i % 5}`), cmd: command(i) });
  log.push({ kind: "entry", entry: { index: i, term: 1, kind: "app", key, command: bytes, stampedAt: i } });
}

const cpu = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

console.log(`idem: retention, ${calls} keyed calls (1/3 enroll, 1/3 claims.release, 1/3 claims.renew), ${rounds} rounds, median CPU seconds`);
console.log("window | idem sessions | snapshot bytes | fold CPU s | encode CPU s | decode CPU s");
for (const window of [calls * 10, ...windows]) {
  const folds: number[] = [];
  let st!: ControlState;
  for (let r = 0; r < rounds; r++) {
    const t = cpu();
    st = new ControlState({ root, claims, idempotencyWindow: window });
    for (const item of log) st.apply(item);
    folds.push(cpu() - t);
  }
  const encodes: number[] = [];
  let bytes!: Uint8Array;
  for (let r = 0; r < rounds; r++) {
    const t = cpu();
    bytes = st.encode();
    encodes.push(cpu() - t);
  }
  const decodes: number[] = [];
  for (let r = 0; r < rounds; r++) {
    const t = cpu();
    const back = ControlState.decode(bytes, { root, claims, idempotencyWindow: window });
    decodes.push(cpu() - t);
    if (back.appliedIndex !== calls) throw new Error("decode lost the applied index");
  }
  const label = window >= calls ? `${window} (none pruned)` : String(window);
  console.log(`${label} | ${st.keyRetention().sessions} | ${bytes.length} | ${median(folds).toFixed(3)} | ${median(encodes).toFixed(3)} | ${median(decodes).toFixed(3)}`);
}
