/**
 * `@heddle/policy` benchmark: pick latency at 10 … 10 000 children, and one allocation round of 1 000
 * grants among 1 000 and 10 000 demanding children by repeated `pick` and by the incremental engine.
 * Floating point appears here only in timing output. Run: `npx -y pnpm@10 --filter @heddle/policy bench`.
 */
import { performance } from "node:perf_hooks";
import { AttachmentId, GroupId, Rational, Weight } from "@heddle/ledger";
import { AllocationEngine, HeddlePolicy } from "../src/index.ts";
import type { PolicyConfig, PolicyEdge } from "../src/index.ts";
import { allocateByRepeatedPick } from "../src/reference-allocation.ts";

let state = 12345;
function rand(n: number): number {
  state = (Math.imul(state, 1103515245) + 12345) >>> 0;
  return (state >>> 8) % n;
}

/** `k` demanding children: weights (1..8)/(1..2), seats spread over 0..99, some history. */
function children(k: number): PolicyEdge[] {
  const out: PolicyEdge[] = [];
  for (let i = 0; i < k; i++) {
    const id = AttachmentId(`child-${String(i).padStart(6, "0")}`);
    const issued = BigInt(rand(1000));
    out.push({
      record: { id, parent: GroupId("parent"), child: GroupId(`g${i}`), weight: Weight.of(BigInt(1 + rand(8)), BigInt(1 + rand(2))) },
      summary: { attachment: id, issued, returned: 0n, spent: issued, outstanding: 0n, committedService: issued },
      demand: { targetOutstanding: 1_000_000n, maximumUsefulGrant: 1_000_000n },
      gauge: { floor: Rational.of(BigInt(rand(100))), folded: 0n },
      baseIssued: issued,
      virtualOffset: Rational.ZERO,
    });
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] ?? 0;
}

function time(f: () => void): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

const config: PolicyConfig = { quantum: 1n };
const HOLDINGS = 1_000_000_000n;

console.log("pick latency (one pick over k demanding children)");
for (const k of [10, 100, 1_000, 10_000]) {
  const edges = children(k);
  const reps = Math.max(5, Math.min(2_000, Math.floor(200_000 / k)));
  for (let i = 0; i < Math.min(reps, 20); i++) HeddlePolicy.pick(edges, config, HOLDINGS);
  const samples: number[] = [];
  for (let i = 0; i < reps; i++) samples.push(time(() => HeddlePolicy.pick(edges, config, HOLDINGS)));
  const p99 = [...samples].sort((a, b) => a - b)[Math.floor(samples.length * 0.99)] ?? 0;
  console.log(`  k=${String(k).padStart(6)}  median ${(median(samples) * 1000).toFixed(1)} µs  p99 ${(p99 * 1000).toFixed(1)} µs  (${reps} picks)`);
}

console.log("allocation round: 1 000 grants (quantum 1, ample holdings)");
for (const k of [1_000, 10_000]) {
  const edges = children(k);
  const engaged = AllocationEngine.prepare(edges, config, HOLDINGS) !== null;
  let engineGrants = HeddlePolicy.allocate(edges, config, HOLDINGS, 1_000);
  const engineRuns: number[] = [];
  for (let i = 0; i < 7; i++) engineRuns.push(time(() => (engineGrants = HeddlePolicy.allocate(edges, config, HOLDINGS, 1_000))));
  let referenceGrants = allocateByRepeatedPick(edges, config, HOLDINGS, 1);
  const referenceMs = time(() => (referenceGrants = allocateByRepeatedPick(edges, config, HOLDINGS, 1_000)));
  const same =
    referenceGrants.length === engineGrants.length &&
    referenceGrants.every((g, i) => g.attachment === engineGrants[i]?.attachment && g.amount === engineGrants[i]?.amount);
  console.log(
    `  k=${String(k).padStart(6)}  repeated pick ${referenceMs.toFixed(1)} ms   engine ${median(engineRuns).toFixed(1)} ms (median of 7, engine ${engaged ? "engaged" : "DECLINED"})   identical grants: ${same}`,
  );
}
