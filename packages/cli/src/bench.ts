// The API latency bench: `concurrency` loops, each reserving at a leaf and completing at once, for
// `durationMs`; one sample per reserve + complete pair, measured around both HTTP calls.
import { ApiError, type HeddleClient } from "@heddle/client";

/** What {@link benchPairs} measured. */
export interface PairsBenchResult {
  readonly opsPerSec: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly concurrency: number;
  readonly durationS: number;
  readonly pairs: number;
  /** Reserves refused (`insufficient` while the scheduler catches up); not counted as pairs. */
  readonly refused: number;
}

/** Options of {@link benchPairs}. */
export interface PairsBenchOptions {
  readonly leaf: string;
  readonly concurrency: number;
  readonly durationMs: number;
  /** Maximum and actual cost of every pair (default 1). */
  readonly cost?: bigint;
}

function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** Runs the bench; see the file comment. */
export async function benchPairs(c: HeddleClient, o: PairsBenchOptions): Promise<PairsBenchResult> {
  const cost = (o.cost ?? 1n).toString();
  const samples: number[] = [];
  let refused = 0;
  const start = performance.now();
  const end = start + o.durationMs;
  const loop = async () => {
    while (performance.now() < end) {
      const t0 = performance.now();
      let id: string;
      try {
        id = (await c.reserve(o.leaf, cost)).id;
      } catch (e) {
        if (e instanceof ApiError && e.status === 409 && e.body.refusal?.kind === "insufficient") {
          refused++;
          await new Promise((r) => setTimeout(r, 5));
          continue;
        }
        throw e;
      }
      await c.complete(id, cost);
      samples.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: o.concurrency }, loop));
  const elapsed = (performance.now() - start) / 1000;
  const sorted = Float64Array.from(samples).sort();
  const round = (x: number) => Math.round(x * 1000) / 1000;
  return {
    opsPerSec: Math.round(samples.length / elapsed),
    p50Ms: round(quantile(sorted, 0.5)),
    p99Ms: round(quantile(sorted, 0.99)),
    concurrency: o.concurrency,
    durationS: round(elapsed),
    pairs: samples.length,
    refused,
  };
}
