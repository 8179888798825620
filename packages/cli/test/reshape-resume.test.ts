// `heddle reshape` run again after an interruption resumes the recipe with the shape asked for, and run
// again once done answers that nothing is left to change (found in review: after the old edge was retired,
// a re-run attached the child under the root, leaving the prepared generation unused; a finished re-run
// exited 2 as a usage error).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governedSoloDaemon, type SoloDaemon } from "../../daemon/test/support/embedded.ts";
import { EXIT } from "../src/exit-codes.ts";
import { heddleOn } from "./support/cli.ts";

let s: SoloDaemon;

const heddle = (argv: string[]) => heddleOn(s.daemon, argv);

type Edge = { id: string; parent: string; child: string; weight: string; lifecycle: string };
async function edgesInto(child: string): Promise<Edge[]> {
  const t = (await s.client.tree()) as { edges: Edge[] };
  return t.edges.filter((e) => e.child === child).sort((a, b) => (a.id < b.id ? -1 : 1));
}

beforeAll(async () => {
  s = await governedSoloDaemon();
  for (const [child, extra] of [["a", []], ["b", ["--parent", "a"]], ["c", ["--parent", "a"]]] as const) {
    const r = await heddle(["reshape", child, ...extra]);
    expect(r.code, r.err).toBe(EXIT.ok);
  }
});
afterAll(() => s.close());

describe("heddle reshape, run again", () => {
  it("after the old edge was retired: activates the prepared generation under the same parent", async () => {
    // an interrupted weight change of b under a: prepared, old closed and retired, new not activated
    await s.client.prepare({ id: "a→b@2", parent: "a", child: "b", weight: 2 });
    await s.client.closeEdge("a→b");
    await s.client.retire("a→b");
    const r = await heddle(["reshape", "b", "--weight", "2", "--json"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(JSON.parse(r.out)).toMatchObject({ child: "b", new: "a→b@2", parent: "a", weight: "2" });
    expect((await edgesInto("b")).map((e) => [e.id, e.lifecycle])).toEqual([["a→b", "RETIRED"], ["a→b@2", "ACTIVE"]]);
    // and without options: the one prepared generation decides the shape
    await s.client.prepare({ id: "root→b", parent: "root", child: "b", weight: 1 });
    await s.client.closeEdge("a→b@2");
    await s.client.retire("a→b@2");
    const bare = await heddle(["reshape", "b"]);
    expect(bare.code, bare.err).toBe(EXIT.ok);
    expect(bare.out).toBe("b now hangs under root with weight 1 (edge root→b)\n");
  });

  it("while the old edge is closing: finishes the recipe with the old edge's parent", async () => {
    await s.client.prepare({ id: "a→c@2", parent: "a", child: "c", weight: 3 });
    await s.client.closeEdge("a→c");
    const r = await heddle(["reshape", "c", "--weight", "3"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect((await edgesInto("c")).map((e) => [e.id, e.lifecycle])).toEqual([["a→c", "RETIRED"], ["a→c@2", "ACTIVE"]]);
  });

  it("once the child hangs as asked: exit 0, nothing changed", async () => {
    const before = JSON.stringify(await edgesInto("c"));
    const again = await heddle(["reshape", "c", "--weight", "3"]);
    expect(again).toMatchObject({ code: EXIT.ok, out: "c already hangs under a with weight 3 (edge a→c@2): nothing to change\n" });
    const json = await heddle(["reshape", "c", "--parent", "a", "--json"]);
    expect(json.code).toBe(EXIT.ok);
    expect(JSON.parse(json.out)).toMatchObject({ child: "c", new: "a→c@2", unchanged: true });
    expect(JSON.stringify(await edgesInto("c"))).toBe(before);
  });
});

describe("heddle reshape blocked by open work (found by a new user's walkthrough)", () => {
  it("a drain that times out names who holds what and the reservations to finish; heddle reservations lists them", async () => {
    await s.client.mint(1000, { holder: s.daemon.self, idempotencyKey: "supply-for-drain" });
    expect((await heddle(["reshape", "d"])).code).toBe(EXIT.ok);
    await s.client.demand({ leaf: "d", targetOutstanding: 10, maximumUsefulGrant: 10 });
    let id: string | null = null;
    for (let i = 0; i < 200 && id === null; i++) {
      const r = await s.client.raw("POST", "/v1/reservations", { leaf: "d", maximumCost: 10 });
      if (r.status === 201) id = (r.body as { id: string }).id;
      else await new Promise((res) => setTimeout(res, 50));
    }
    expect(id).not.toBeNull();
    const listed = await heddle(["reservations"]);
    expect(listed.code, listed.err).toBe(EXIT.ok);
    expect(listed.out).toContain(id!);
    const blocked = await heddle(["reshape", "d", "--weight", "2", "--drain-timeout", "1"]);
    expect(blocked.code).toBe(EXIT.unknown);
    expect(blocked.err).toMatch(/did not drain within 1 s \(.+ holds \d+\)/);
    expect(blocked.err).toContain("its open reservations there must complete (heddle reservations on that peer lists them)");
    // once what the peer holds under d is spent, running the same command again finishes the reshape
    await s.client.demand({ leaf: "d", targetOutstanding: 0, maximumUsefulGrant: 0 });
    await s.client.complete(id!, 4);
    const held = BigInt(((await s.client.holdings("d")) as { groups: { holdings: string }[] }).groups[0]!.holdings);
    expect(held).toBeGreaterThan(0n); // 10 granted, 4 spent: the rest still holds the closed edge open
    const rest = (await s.client.reserve("d", held)) as { id: string };
    await s.client.complete(rest.id, held);
    const resumed = await heddle(["reshape", "d", "--weight", "2", "--drain-timeout", "60"]);
    expect(resumed.code, resumed.err).toBe(EXIT.ok);
    expect(resumed.out).toContain("d now hangs under root with weight 2");
    expect((await heddle(["reservations"])).out).toBe("no open reservations on this peer\n");
  });
});
