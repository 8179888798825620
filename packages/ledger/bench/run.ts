// Ledger benchmarks (issue 2). Prints figures; asserts nothing about time.
//   npx -y pnpm@10 --filter @heddle/ledger bench
import { AttachmentId, EntitlementLedger, GroupId, LedgerReplica, ReplicaId, Weight } from "../src/index.ts";

const ROOT = GroupId("root");

interface Tree {
  replica: LedgerReplica;
  leaves: GroupId[];
  leafEdges: AttachmentId[];
  writers: ReplicaId[];
}

/** root → T tenants → L leaves each; `writers` replicas minted at the root and funded down every edge. */
function buildTree(tenants: number, leavesPer: number, writers: number): Tree {
  const ws = Array.from({ length: writers }, (_, i) => ReplicaId(`w${String(i).padStart(2, "0")}`));
  const r = new LedgerReplica(EntitlementLedger.bootstrap(ROOT, new Map(ws.map((w) => [w, 1n << 50n])), "bench"));
  const leaves: GroupId[] = [];
  const leafEdges: AttachmentId[] = [];
  const ok = (res: { ok: boolean }) => {
    if (!res.ok) throw new Error(`bench setup refused: ${JSON.stringify(res)}`);
  };
  for (let t = 0; t < tenants; t++) {
    const tg = GroupId(`t${t}`);
    const te = AttachmentId(`root>t${t}`);
    ok(r.prepare({ id: te, parent: ROOT, child: tg, weight: Weight.of(BigInt(1 + (t % 3))) }));
    ok(r.activate(te));
    for (const w of ws) ok(r.delegate(w, te, 1n << 40n));
    for (let l = 0; l < leavesPer; l++) {
      const lg = GroupId(`t${t}.l${l}`);
      const le = AttachmentId(`t${t}>l${l}`);
      ok(r.prepare({ id: le, parent: tg, child: lg, weight: Weight.ONE }));
      ok(r.activate(le));
      for (const w of ws) ok(r.delegate(w, le, 1n << 30n));
      leaves.push(lg);
      leafEdges.push(le);
    }
  }
  return { replica: r, leaves, leafEdges, writers: ws };
}

function stats(samplesNs: bigint[]): { median: string; p99: string } {
  const s = samplesNs.map(Number).sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  const us = (ns: number) => `${(ns / 1000).toFixed(2)} µs`;
  return { median: us(q(0.5)), p99: us(q(0.99)) };
}

function time(fn: () => void): bigint {
  const t0 = process.hrtime.bigint();
  fn();
  return process.hrtime.bigint() - t0;
}

function row(...cols: string[]): void {
  console.log(cols.map((c, i) => (i === 0 ? c.padEnd(58) : c.padStart(14))).join(""));
}

function rng(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 2 ** 32;
  };
}

console.log(`@heddle/ledger bench — node ${process.version}, ${new Date().toISOString()}`);
console.log("");

// 1. spend and delegate latency, 1,000 edges, 16 writers.
{
  const t = buildTree(10, 99, 16);
  const r = t.replica;
  const rand = rng(1);
  const N = 20_000;
  const spendMut: bigint[] = [];
  const delegateMut: bigint[] = [];
  for (let i = 0; i < N; i++) {
    const w = t.writers[i % 16]!;
    const li = Math.floor(rand() * t.leaves.length);
    spendMut.push(time(() => void r.spend(w, t.leaves[li]!, 1n)));
    delegateMut.push(time(() => void r.delegate(w, t.leafEdges[li]!, 1n)));
  }
  const v = r.snapshot();
  const spendImm: bigint[] = [];
  const delegateImm: bigint[] = [];
  let view = v;
  for (let i = 0; i < 2_000; i++) {
    const w = t.writers[i % 16]!;
    const li = Math.floor(rand() * t.leaves.length);
    spendImm.push(
      time(() => {
        const res = view.spend(w, t.leaves[li]!, 1n);
        if (res.ok) view = view.join(res.patch);
      }),
    );
  }
  row("1,000 edges, 16 writers (check + patch + join into local copy)", "median", "p99");
  const a = stats(spendMut);
  const b = stats(delegateMut);
  const c = stats(spendImm);
  row("  spend    — LedgerReplica (mutable, in place)", a.median, a.p99);
  row("  delegate — LedgerReplica (mutable, in place)", b.median, b.p99);
  row("  spend    — EntitlementLedger (immutable value + join)", c.median, c.p99);
  for (let i = 0; i < 2_000; i++) {
    const w = t.writers[i % 16]!;
    const li = Math.floor(rand() * t.leaves.length);
    delegateImm.push(
      time(() => {
        const res = view.delegate(w, t.leafEdges[li]!, 1n);
        if (res.ok) view = view.join(res.patch);
      }),
    );
  }
  const d = stats(delegateImm);
  row("  delegate — EntitlementLedger (immutable value + join)", d.median, d.p99);
  console.log("");
}

// 2. joining a 10-slot patch into ledgers of 100, 1,000 and 10,000 edges.
{
  row("join a 10-slot patch", "replica median", "p99", "value median");
  for (const [tenants, leavesPer] of [[4, 24], [10, 99], [100, 99]] as const) {
    const t = buildTree(tenants, leavesPer, 4);
    const edges = tenants + tenants * leavesPer;
    const rand = rng(2);
    const patches: EntitlementLedger[] = [];
    for (let i = 0; i < 2_000; i++) {
      const slots: [string, [string, string][]][] = [];
      const used = new Set<string>();
      while (slots.length < 10) {
        const e = t.leafEdges[Math.floor(rand() * t.leafEdges.length)]!;
        if (used.has(e)) continue;
        used.add(e);
        slots.push([e, [["w00", String((1n << 31n) + BigInt(i))]]]);
      }
      slots.sort((x, y) => (x[0] < y[0] ? -1 : 1));
      patches.push(EntitlementLedger.decode(JSON.stringify({ format: "heddle-ledger/1", issued: slots })));
    }
    const r = t.replica;
    const rep = patches.map((p) => time(() => void r.apply(p)));
    const snap = r.snapshot();
    const val = patches.slice(0, 200).map((p) => time(() => void snap.join(p)));
    const a = stats(rep);
    row(`  ${edges.toLocaleString("en")} edges`, a.median, a.p99, stats(val).median);
  }
  console.log("");
}

// 3. full-state join of two 1,000-edge ledgers; validate(); encoded size.
{
  const a = buildTree(10, 99, 8);
  const b = buildTree(10, 99, 8);
  const rand = rng(3);
  for (let i = 0; i < 2000; i++) {
    const li = Math.floor(rand() * a.leaves.length);
    a.replica.spend(a.writers[i % 8]!, a.leaves[li]!, 1n);
    b.replica.spend(b.writers[(i + 3) % 8]!, b.leaves[(li + 7) % b.leaves.length]!, 2n);
  }
  const va = a.replica.snapshot();
  const vb = b.replica.snapshot();
  const joins: bigint[] = [];
  for (let i = 0; i < 50; i++) joins.push(time(() => void va.join(vb)));
  const j = stats(joins);
  row("full-state join of two 1,000-edge ledgers (8 writers each)", j.median, j.p99);
  console.log("");

  for (const [tenants, leavesPer] of [[10, 99], [100, 99]] as const) {
    const t = buildTree(tenants, leavesPer, 16);
    const v = t.replica.snapshot();
    const edges = tenants + tenants * leavesPer;
    const runs: bigint[] = [];
    let conflicts = -1;
    for (let i = 0; i < (edges > 5000 ? 3 : 10); i++) runs.push(time(() => void (conflicts = v.validate().length)));
    const s = stats(runs);
    row(`validate() at ${edges.toLocaleString("en")} edges, 16 writers (${conflicts} conflicts)`, s.median.replace("µs", "µs"), "");
    const text = v.encode();
    const bytes = Buffer.byteLength(text, "utf8");
    row(`  encoded size: ${bytes.toLocaleString("en")} bytes`, `${(bytes / edges).toFixed(0)} B/edge`, "");
  }
}
