/**
 * The etcd backend under faults (issue 18): while two operators mint and reshape through different heddle members,
 * one etcd member is SIGKILLed and restarted (twice, the second time the etcd leader), a heddle member's connection
 * to etcd (its watch included) is cut and resumed, and a member's writer gate is watched fail closed while its log
 * is unreachable. No act is lost or applied twice (each keyed act retried after `OutcomeUnknownError` until it
 * answers), and every heddle peer converges to the same `ControlState` and data-plane ledger.
 */
import { afterEach, describe, expect, it } from "vitest";
import { AttachmentId, GroupId, ReplicaId } from "@heddle/ledger";
import { ControlState, mintIdOf, OutcomeUnknownError } from "../src/index.ts";
import type { ControlOutcome, EtcdControlLog, GovernedHeddleNode, ProposalKey } from "../src/index.ts";
import { sleep } from "./support/etcd-cluster.ts";
import { EtcdBackend } from "./support/log-backends.ts";
import { rec } from "./support/governed-cluster.ts";

let backend: EtcdBackend | null = null;
afterEach(async () => {
  await backend?.close();
  backend = null;
});

const hex = (u: Uint8Array): string => Buffer.from(u).toString("hex");

/** One keyed act, retried with the same key after every `OutcomeUnknownError` until it answers. */
async function exactlyOnce(call: (opts: { key: ProposalKey; timeoutMs: number }) => Promise<ControlOutcome>, key: ProposalKey, tries: { n: number }): Promise<ControlOutcome> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call({ key, timeoutMs: 2_500 });
    } catch (e) {
      if (!(e instanceof OutcomeUnknownError) || attempt >= 40) throw e;
      tries.n++;
      await sleep(100);
    }
  }
}

describe("etcd backend under faults", () => {
  it("an etcd member killed and restarted, a heddle member's watch cut and resumed, while operators mint and reshape: nothing lost or doubled, every peer converges", async () => {
    const b = (backend = await EtcdBackend.start());
    await b.enrollAll();
    const unknowns = { n: 0 };
    const mints = new Map<string, bigint>(); // mintId → amount, for every mint act
    const reshaped: string[] = [];
    let stop = false;

    const operator = async (who: number, gov: () => GovernedHeddleNode): Promise<void> => {
      let seq = 0;
      for (let k = 0; !stop && k < 400; k++) {
        const amount = BigInt(k + 1);
        const key = { client: `operator-${who}`, seq: ++seq };
        const o = await exactlyOnce((opts) => gov().mint(ReplicaId(`m${who + 1}`), amount, opts), key, unknowns);
        expect(o.kind).toBe("applied");
        mints.set(mintIdOf(key), amount);
        // a reshape step: a new edge under its own child, prepared, activated, closed and retired
        const edge = `op${who}-e${k}`;
        for (const step of ["prepare", "activate", "close", "retire"] as const) {
          const key2 = { client: `operator-${who}`, seq: ++seq };
          const out = await exactlyOnce(
            (opts) => (step === "prepare" ? gov().prepare(rec(edge, "root", `op${who}-c${k}`), opts) : gov()[step](AttachmentId(edge), opts)),
            key2,
            unknowns,
          );
          expect(out.kind, `${step} ${edge}: ${JSON.stringify(out, (_k, v) => (typeof v === "bigint" ? String(v) : v))}`).toBe("applied");
        }
        reshaped.push(edge);
      }
    };

    const faults = (async () => {
      await sleep(700);
      await b.etcd.kill(1); // a follower or the leader, whichever member 1 is
      await sleep(1_500);
      b.etcd.startMember(1);
      await b.etcd.ready();
      await sleep(500);
      b.proxies[2]!.cut(800); // heddle member m3: connections and watch cut, reconnects refused for 0.8 s
      await sleep(1_500);
      const leader = await b.etcd.leader();
      await b.etcd.kill(leader ?? 0); // now the etcd leader
      await sleep(2_000);
      b.etcd.startMember(leader ?? 0);
      await b.etcd.ready();
      b.proxies[0]!.cut(); // and m1's connections, once more
      await sleep(1_000);
    })();
    const ops = [operator(0, () => b.members[0]!.gov), operator(1, () => b.members[1]!.gov)];
    await faults;
    stop = true;
    await Promise.all(ops);

    const view = await b.members[2]!.gov.sync({ timeoutMs: 20_000 });
    await b.applied(view.appliedIndex, 30_000);
    const states = b.members.map((m) => m.gov.controlView() as ControlState);
    for (const s of states) {
      expect(s.appliedIndex).toBe(states[0]!.appliedIndex);
      expect(hex(s.encode())).toBe(hex(states[0]!.encode()));
    }
    // every mint applied exactly once: the minted map holds each act's id once with its amount, nothing else
    const minted = states[0]!.minted();
    expect(minted.size).toBe(mints.size);
    for (const [id, amount] of mints) expect(minted.get(id as never)?.amount).toBe(amount);
    expect(states[0]!.mintedTotal()).toBe([...mints.values()].reduce((a, x) => a + x, 0n));
    for (const edge of reshaped) expect(states[0]!.lifecycle(AttachmentId(edge))).toBe("RETIRED");
    expect(mints.size).toBeGreaterThan(4); // the operators kept working through the faults
    // the data planes converge on what the log decided (patches gossip between the peers)
    const until = Date.now() + 20_000;
    const ledgersAgree = (): boolean =>
      b.members.every((m) => m.gov.ledger.get().mintedTotal() === states[0]!.mintedTotal() && reshaped.every((e) => m.gov.ledger.get().lifecycle(AttachmentId(e)) === "RETIRED"));
    while (!ledgersAgree() && Date.now() < until) await sleep(50);
    expect(ledgersAgree()).toBe(true);
    // the cut member resynchronised its reader at least once
    expect((b.members[2]!.log as EtcdControlLog).counters().resyncs).toBeGreaterThanOrEqual(1);
    console.log(`etcd faults: ${mints.size} mints and ${reshaped.length} reshapes applied once each through 2 etcd kills and 2 cuts; ${unknowns.n} OutcomeUnknown answers retried by key`);
  }, 120_000);

  it("closes the writer gate while the log is unreachable and reopens it when etcd answers again; a control call meanwhile ends OutcomeUnknown and its keyed retry applies once", async () => {
    const b = (backend = await EtcdBackend.start());
    await b.enrollAll();
    const m = b.members[1]!;
    const log = m.log as EtcdControlLog;
    expect(m.gov.isWritable).toBe(true);
    const before = m.gov.reserve(GroupId("root"), 1n);
    expect(before.ok || before.refusal.kind !== "not-writable").toBe(true);
    b.disconnect(1);
    const until = Date.now() + 10_000;
    while (log.available.get() && Date.now() < until) await sleep(50);
    expect(log.available.get()).toBe(false);
    expect(m.gov.isWritable).toBe(false);
    expect(m.gov.reserve(GroupId("root"), 1n)).toEqual({ ok: false, refusal: { kind: "not-writable" } });
    expect(m.gov.schedule(GroupId("root")).grants).toEqual([]);
    const key = { client: "gate-test", seq: 1 };
    await expect(m.gov.mint(ReplicaId("m2"), 7n, { key, timeoutMs: 1_000 })).rejects.toBeInstanceOf(OutcomeUnknownError);
    b.reconnect(1);
    while (!log.available.get() && Date.now() < until + 10_000) await sleep(50);
    expect(m.gov.isWritable).toBe(true);
    expect((await m.gov.mint(ReplicaId("m2"), 7n, { key, timeoutMs: 10_000 })).kind).toBe("applied");
    const v = await b.members[0]!.gov.sync({ timeoutMs: 10_000 });
    await b.applied(v.appliedIndex);
    for (const x of b.members) expect(x.gov.controlView().mintedTotal()).toBe(7n);
  }, 60_000);
});
