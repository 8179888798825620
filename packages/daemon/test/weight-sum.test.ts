// A prepare whose weight would make its parent's children's weights sum past 2^63 − 1 is refused by the API (409
// naming `weight`) before it is proposed: the ledger would accept it, and the parent could then never be scheduled
// again (every round throws LedgerOverflowError: weights-overflow.test.ts). Retries of an applied prepare and
// re-weights (a new generation of the same child) are judged without the edge they replace.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { governedSoloDaemon, type SoloDaemon } from "./support/embedded.ts";

const P62 = 2n ** 62n;
let s: SoloDaemon;
beforeAll(async () => {
  s = await governedSoloDaemon();
  await s.client.mint(1_000);
});
afterAll(() => s.close());

const prepare = (id: string, child: string, weight: string, key?: string) =>
  s.client.raw("POST", "/v1/control/prepare", { id, parent: "root", child, weight }, key === undefined ? {} : { idempotencyKey: key });

describe("prepare: the parent's children's weight sum stays in int64", () => {
  it("refuses the weight that would overflow it, naming weight, and changes nothing", async () => {
    expect((await prepare("root→a", "a", P62.toString(), "prep-a")).status).toBe(200);
    expect((await s.client.raw("POST", "/v1/control/activate", { edge: "root→a" })).status).toBe(200);
    const refused = await prepare("root→b", "b", P62.toString());
    expect(refused.status).toBe(409);
    expect(refused.body).toMatchObject({
      error: "refused",
      refusal: { kind: "weight-sum-overflow", field: "weight", parent: "root", weight: P62.toString() },
      issues: [{ field: "weight", in: "body" }],
      committed: false,
      message: expect.stringMatching(/^prepare: weight 4611686018427387904 would make the weights of root's children \(this edge and 1 other ACTIVE or PREPARED\) sum past 2\^63 − 1/),
    });
    const tree = (await s.client.tree()) as { edges: { id: string }[] };
    expect(tree.edges.map((e) => e.id)).not.toContain("root→b");
    // a fraction whose sum's intermediates leave int64 is refused as well
    expect((await prepare("root→c", "c", `1/${P62}`)).body).toMatchObject({ refusal: { kind: "weight-sum-overflow" } });
    // up to the limit exactly is fine, a PREPARED sibling counts too
    expect((await prepare("root→b", "b", (P62 - 1n).toString())).status).toBe(200);
    expect((await prepare("root→d", "d", "1")).body).toMatchObject({ refusal: { kind: "weight-sum-overflow" } });
  });

  it("judges a retried prepare and a re-weight without the edge they replace", async () => {
    // the applied prepare, retried under its key, still answers (it is not counted against itself)
    const retry = await prepare("root→a", "a", P62.toString(), "prep-a");
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ kind: "applied" });
    // a new generation of a: its old edge leaves when it retires, so only the new weight counts
    expect((await prepare("root→a2", "a", P62.toString())).status).toBe(200);
    expect((await prepare("root→a3", "a", (P62 + 1n).toString())).body).toMatchObject({ refusal: { kind: "weight-sum-overflow", parent: "root" } });
  });
});
