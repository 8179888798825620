// The canonical, versioned table encoding: deterministic, round-tripping, and strict.
import { describe, expect, it } from "vitest";
import { ClaimsDecodeError, createClaims, decodeClaims } from "../src/index.ts";

function sample() {
  const t = createClaims({ roster: ["b", "a", "pool"], capacity: { pool: 3, a: null }, maxPerHolder: 4 });
  t.take({ holder: "w1", resources: [{ key: "b", mode: "exclusive" }], scope: "run-1", label: "fix #4" }, 10);
  t.take({ holder: "w2", resources: [{ key: "pool", mode: "shared" }, { key: "a", mode: "shared" }], ttlMs: 500 }, 20);
  return t;
}

describe("table encoding", () => {
  it("is the documented canonical text", () => {
    expect(sample().encode()).toBe(
      '{"format":"heddle-claims/1","roster":["b","a","pool"],"capacity":[["a",null],["pool",3]],"maxPerHolder":4,' +
        '"now":20,"lastToken":2,"claims":[["b","w1","exclusive",1,10,null,null,"run-1","fix #4"],' +
        '["pool","w2","shared",2,20,500,520,null,null],["a","w2","shared",2,20,500,520,null,null]]}',
    );
    expect(createClaims().encode()).toBe('{"format":"heddle-claims/1","now":0,"lastToken":0}');
  });

  it("round-trips, and a decoded table behaves like the original", () => {
    const t = sample();
    const d = decodeClaims(t.encode());
    expect(d.encode()).toBe(t.encode());
    expect(d.open()).toEqual(t.open());
    const r1 = t.take({ holder: "w3", resources: [{ key: "b", mode: "exclusive" }] }, 30);
    const r2 = d.take({ holder: "w3", resources: [{ key: "b", mode: "exclusive" }] }, 30);
    expect(r2).toEqual(r1);
    expect(d.take({ holder: "w3", resources: [{ key: "pool", mode: "shared" }] }, 30)).toEqual(
      t.take({ holder: "w3", resources: [{ key: "pool", mode: "shared" }] }, 30),
    );
    expect(d.encode()).toBe(t.encode());
  });

  it("normalises field order and capacity order", () => {
    const canonical = sample().encode();
    const doc = JSON.parse(canonical) as Record<string, unknown>;
    const shuffled = JSON.stringify({
      claims: doc["claims"],
      lastToken: doc["lastToken"],
      now: doc["now"],
      capacity: [...(doc["capacity"] as unknown[])].reverse(),
      maxPerHolder: doc["maxPerHolder"],
      roster: doc["roster"],
      format: doc["format"],
    });
    expect(decodeClaims(shuffled).encode()).toBe(canonical);
  });

  it("rejects bad input", () => {
    const good = JSON.parse(sample().encode()) as Record<string, unknown>;
    const claims = good["claims"] as unknown[][];
    const row = (i: number, field: number, v: unknown) => {
      const c = claims.map((r) => [...r]);
      (c[i] as unknown[])[field] = v;
      return JSON.stringify({ ...good, claims: c });
    };
    const bad: string[] = [
      "not json",
      "[]",
      JSON.stringify({ ...good, format: "heddle-claims/2" }),
      JSON.stringify({ ...good, extra: 1 }),
      JSON.stringify({ ...good, roster: ["a", "a"] }),
      JSON.stringify({ ...good, roster: [" a"] }),
      JSON.stringify({ ...good, capacity: [["a", 0]] }),
      JSON.stringify({ ...good, capacity: [["a", null], ["a", 2]] }),
      JSON.stringify({ ...good, capacity: [] }),
      JSON.stringify({ ...good, maxPerHolder: 0 }),
      JSON.stringify({ ...good, now: -1 }),
      JSON.stringify({ ...good, now: 1.5 }),
      JSON.stringify({ ...good, lastToken: 1 }), // a token above lastToken
      JSON.stringify({ ...good, claims: [] }),
      JSON.stringify({ ...good, claims: [claims[1], claims[0]] }), // tokens out of order
      JSON.stringify({ ...good, claims: [...claims, claims[2]] }), // holder twice on a key
      row(0, 0, "zz"), // off the roster
      row(0, 2, "both"),
      row(0, 3, 0),
      row(0, 4, 99), // granted after now
      row(0, 5, 100), // ttl without expiry
      row(1, 6, 10), // expiry before since + ttl
      row(0, 7, ""),
      row(0, 1, "\udc00"),
      row(0, 8, 7),
      // a shared claim beside w1's exclusive claim on b
      JSON.stringify({ ...good, claims: [...claims, ["b", "w9", "shared", 2, 20, null, null, null, null]] }),
      JSON.stringify({ ...good, roster: ["b", "a"], capacity: [["a", null]] }), // the claim on pool is off the roster now
    ];
    for (const text of bad) expect(() => decodeClaims(text), text).toThrow(ClaimsDecodeError);
    // capacity overflow on a pool
    const full = JSON.stringify({
      ...good,
      capacity: [["a", null], ["pool", 1]],
      claims: [...claims, ["pool", "w9", "shared", 2, 20, null, null, null, null]],
    });
    expect(() => decodeClaims(full)).toThrow(/capacity/);
  });
});
