/**
 * Every refusal of the claims package names what is wrong, exactly: the table decoder, the slot decoders, the
 * table options, a malformed take and a bad time. The older suites checked only that bad input throws (or is
 * refused), so a check dropped behind a later one, a bound moved by one or an emptied message went unseen
 * (Stryker, issue 19). Each case also sits at the edge of its range: the first value refused and the last
 * one accepted.
 */
import { describe, expect, it } from "vitest";
import {
  ClaimsDecodeError,
  CLAIM_GUARANTEES,
  createClaims,
  decodeAdvisorySlot,
  decodeClaims,
  decodeKeeperSlot,
} from "../src/index.ts";
import type { TakeRequest } from "../src/index.ts";
import { thrown } from "./support/thrown.ts";

function sample() {
  const t = createClaims({ roster: ["b", "a", "pool"], capacity: { pool: 3, a: null }, maxPerHolder: 4 });
  t.take({ holder: "w1", resources: [{ key: "b", mode: "exclusive" }], scope: "run-1", label: "fix #4" }, 10);
  t.take({ holder: "w2", resources: [{ key: "pool", mode: "shared" }, { key: "a", mode: "shared" }], ttlMs: 500 }, 20);
  return t;
}

describe("decodeClaims names what is wrong", () => {
  const good = JSON.parse(sample().encode()) as Record<string, unknown>;
  const claims = good["claims"] as unknown[][];
  const doc = (o: Record<string, unknown>) => JSON.stringify({ ...good, ...o });
  const row = (i: number, field: number, v: unknown) => {
    const c = claims.map((r) => [...r]);
    c[i]![field] = v;
    return doc({ claims: c });
  };
  const E = (why: string) => `ClaimsDecodeError: claims table: ${why}`;

  it("the envelope and the options", () => {
    const cases: [unknown, string][] = [
      [5, E("input must be a string")],
      ["not json", E("not JSON")],
      ["[]", E("not an object")],
      ["null", E("not an object")],
      ["7", E("not an object")],
      [doc({ extra: 1 }), E('unknown field "extra"')],
      [doc({ format: "heddle-claims/2" }), E('format must be "heddle-claims/1"')],
      [doc({ roster: "b" }), E("roster must be a list")],
      [doc({ roster: [" b", "a", "pool"] }), E('roster key " b" carries surrounding white space')],
      [doc({ roster: ["", "a", "pool"] }), E("roster key must not be empty")],
      [doc({ roster: [3, "a", "pool"] }), E("roster key must be a string")],
      [doc({ roster: ["b", "b", "a", "pool"] }), E('roster lists "b" twice')],
      [doc({ capacity: [] }), E("capacity must be a non-empty list of pairs")],
      [doc({ capacity: {} }), E("capacity must be a non-empty list of pairs")],
      [doc({ capacity: [["a"]] }), E("capacity entries must be [key, capacity] pairs")],
      [doc({ capacity: ["a"] }), E("capacity entries must be [key, capacity] pairs")],
      [doc({ capacity: [[1, 2]] }), E("capacity key must be a string")],
      [doc({ capacity: [["a ", 2]] }), E('capacity key "a " carries surrounding white space')],
      [doc({ capacity: [["a", null], ["a", 2]] }), E('capacity lists "a" twice')],
      [doc({ capacity: [["a", 0]] }), E("capacity must be a safe integer ≥ 1")],
      [doc({ capacity: [["a", 1.5]] }), E("capacity must be a safe integer ≥ 1")],
      [doc({ capacity: [["a", "2"]] }), E("capacity must be a safe integer ≥ 1")],
      [doc({ capacity: [["zz", 2]] }), E('capacity names "zz", which is not on the roster')],
      [doc({ maxPerHolder: 0 }), E("maxPerHolder must be a safe integer ≥ 1")],
      [doc({ now: -1 }), E("now must be a safe integer ≥ 0")],
      [doc({ now: 1.5 }), E("now must be a safe integer ≥ 0")],
      [doc({ now: 2 ** 53 }), E("now must be a safe integer ≥ 0")],
      [doc({ lastToken: -1 }), E("lastToken must be a safe integer ≥ 0")],
      [doc({ lastToken: 1 }), E("token 2 is above lastToken 1")],
    ];
    for (const [text, message] of cases) expect(thrown(() => decodeClaims(text as string)), String(text)).toBe(message);
    // the last values accepted
    expect(thrown(() => decodeClaims(doc({ capacity: [["a", 1], ["pool", 3]] })))).toBe("accepted");
    expect(thrown(() => decodeClaims(doc({ maxPerHolder: 1 })))).toBe("accepted");
    expect(thrown(() => decodeClaims(doc({ lastToken: 2 })))).toBe("accepted");
    expect(decodeClaims('{"format":"heddle-claims/1","now":0,"lastToken":0}').encode()).toBe('{"format":"heddle-claims/1","now":0,"lastToken":0}');
    expect(decodeClaims(doc({ now: 2 ** 53 - 1 })).encode()).toContain(`"now":${2 ** 53 - 1}`);
    const e = (() => {
      try {
        decodeClaims("x");
      } catch (err) {
        return err;
      }
    })();
    expect(e).toBeInstanceOf(ClaimsDecodeError);
    expect((e as ClaimsDecodeError).name).toBe("ClaimsDecodeError");
  });

  it("the claim rows", () => {
    const cases: [string, string][] = [
      [doc({ claims: [] }), E("claims must be a non-empty list")],
      [doc({ claims: "x" }), E("claims must be a non-empty list")],
      [doc({ claims: [["b"]] }), E("each claim must be a list of 9 fields")],
      [doc({ claims: ["b"] }), E("each claim must be a list of 9 fields")],
      [row(0, 0, " b"), E('key " b" carries surrounding white space')],
      [row(0, 0, ""), E("key must not be empty")],
      [row(0, 1, ""), E("holder must not be empty")],
      [row(0, 1, "\udc00"), E("holder is not well-formed UTF-16")],
      [row(0, 1, "h".repeat(1025)), E("holder is longer than 1024 code units")],
      [row(0, 2, "both"), E("mode must be 'exclusive' or 'shared'")],
      [row(0, 3, 0), E("token must be a safe integer ≥ 1")],
      [doc({ claims: [claims[1], claims[0]] }), E("tokens must not decrease in the order taken")],
      [row(0, 4, 21), E("a claim granted at 21 is after now 20")],
      [row(0, 4, -1), E("since must be a safe integer ≥ 0")],
      [row(0, 5, 100), E("ttlMs and expiresAt come together")],
      [row(1, 6, null), E("ttlMs and expiresAt come together")],
      [row(1, 5, 0), E("ttlMs must be a safe integer ≥ 1")],
      [row(1, 6, -1), E("expiresAt must be a safe integer ≥ 0")],
      [row(1, 6, 519), E("expiresAt must lie between since + ttlMs and now + ttlMs")],
      [row(1, 6, 521), E("expiresAt must lie between since + ttlMs and now + ttlMs")],
      [row(0, 7, ""), E("scope must not be empty")],
      [row(0, 8, 7), E("label must be a string of at most 4096 code units")],
      [row(0, 8, "l".repeat(4097)), E("label must be a string of at most 4096 code units")],
      [row(0, 0, "zz"), E('claim on "zz", which is not on the roster')],
      [doc({ claims: [...claims, claims[2]] }), E('w2 is recorded twice on "a"')],
      [doc({ claims: [...claims, ["b", "w9", "shared", 2, 20, null, null, null, null]] }), E('an exclusive claim on "b" sits beside another')],
      [doc({ claims: [...claims, ["b", "w9", "exclusive", 2, 20, null, null, null, null]] }), E('an exclusive claim on "b" sits beside another')],
      [
        doc({ capacity: [["a", null], ["pool", 1]], claims: [...claims, ["pool", "w9", "shared", 2, 20, null, null, null, null]] }),
        E('2 claims on "pool" exceed its capacity 1'),
      ],
      // a key without a capacity entry holds one claim
      [doc({ roster: undefined, capacity: undefined, claims: [claims[0], ["b", "w9", "shared", 1, 20, null, null, null, null]] }), E('an exclusive claim on "b" sits beside another')],
      [
        doc({ roster: undefined, capacity: undefined, claims: [["k", "w1", "shared", 1, 10, null, null, null, null], ["k", "w2", "shared", 1, 10, null, null, null, null]] }),
        E('2 claims on "k" exceed its capacity 1'),
      ],
    ];
    for (const [text, message] of cases) expect(thrown(() => decodeClaims(text)), text).toBe(message);
    // the edges of each range, accepted: a lease granted at 10 with ttl 5 expires in 15 … 25 (now is 20)
    for (const expiresAt of [15, 20, 25]) {
      const c = claims.map((r) => [...r]);
      c[0]![5] = 5;
      c[0]![6] = expiresAt;
      expect(thrown(() => decodeClaims(doc({ claims: c }))), `expiresAt ${expiresAt}`).toBe("accepted");
    }
    for (const expiresAt of [14, 26]) {
      const c = claims.map((r) => [...r]);
      c[0]![5] = 5;
      c[0]![6] = expiresAt;
      expect(thrown(() => decodeClaims(doc({ claims: c }))), `expiresAt ${expiresAt}`).toBe(E("expiresAt must lie between since + ttlMs and now + ttlMs"));
    }
    expect(thrown(() => decodeClaims(row(0, 4, 20)))).toBe("accepted");
    expect(thrown(() => decodeClaims(row(0, 8, "l".repeat(4096))))).toBe("accepted");
    expect(thrown(() => decodeClaims(row(0, 1, "h".repeat(1024))))).toBe("accepted");
    // unlimited capacity (null) and an uncapped key on a table with capacities
    expect(thrown(() => decodeClaims(doc({ claims: [...claims, ["a", "w9", "shared", 2, 20, null, null, null, null]] })))).toBe("accepted");
    expect(thrown(() => decodeClaims(doc({ capacity: [["a", null], ["pool", 2]], claims: [...claims, ["pool", "w9", "shared", 2, 20, null, null, null, null]] })))).toBe("accepted");
  });
});

describe("table options and takes name what is wrong", () => {
  it("createClaims throws RangeError on a bad option, and accepts the edges", () => {
    const cases: [Parameters<typeof createClaims>[0], string][] = [
      [{ roster: ["a", " a"] }, 'RangeError: roster lists "a" twice'],
      [{ roster: [" "] }, "RangeError: roster key must not be empty"],
      [{ roster: [7 as unknown as string] }, "RangeError: roster key must be a string"],
      [{ capacity: { " ": 2 } }, "RangeError: capacity key must not be empty"],
      [{ capacity: { a: 2, " a": 3 } }, 'RangeError: capacity lists "a" twice (after trimming)'],
      [{ roster: ["a"], capacity: { b: 2 } }, 'RangeError: capacity names "b", which is not on the roster'],
      [{ capacity: { a: 0 } }, 'RangeError: capacity of "a" must be a safe integer ≥ 1 or null, got 0'],
      [{ capacity: { a: 1.5 } }, 'RangeError: capacity of "a" must be a safe integer ≥ 1 or null, got 1.5'],
      [{ maxPerHolder: 0 }, "RangeError: maxPerHolder must be a safe integer ≥ 1, got 0"],
      [{ maxPerHolder: 2.5 }, "RangeError: maxPerHolder must be a safe integer ≥ 1, got 2.5"],
    ];
    for (const [options, message] of cases) expect(thrown(() => createClaims(options)), JSON.stringify(options)).toBe(message);
    expect(thrown(() => createClaims({ roster: ["a"], capacity: { a: 1 }, maxPerHolder: 1 }))).toBe("accepted");
    expect(thrown(() => createClaims({ roster: ["a"], capacity: { " a ": null } }))).toBe("accepted");
  });

  it("a malformed take is refused with the reason, and changes nothing", () => {
    const t = createClaims();
    const r = (key: string, mode = "shared") => ({ key, mode }) as TakeRequest["resources"][number];
    const cases: [unknown, string][] = [
      [null, "request must be an object"],
      [{ holder: 5, resources: [r("a")] }, "holder must be a string"],
      [{ holder: "", resources: [r("a")] }, "holder must not be empty"],
      [{ holder: "h".repeat(1025), resources: [r("a")] }, "holder is longer than 1024 code units"],
      [{ holder: "\ud800", resources: [r("a")] }, "holder is not well-formed UTF-16"],
      [{ holder: "w", resources: [] }, "resources must be a non-empty list"],
      [{ holder: "w" }, "resources must be a non-empty list"],
      [{ holder: "w", resources: Array.from({ length: 257 }, (_, i) => r(`k${i}`)) }, "a take may name at most 256 resources"],
      [{ holder: "w", resources: [null] }, "each resource needs a string key"],
      [{ holder: "w", resources: [{ key: 3, mode: "shared" }] }, "each resource needs a string key"],
      [{ holder: "w", resources: [r("  ")] }, "key must not be empty"],
      [{ holder: "w", resources: [r("a", "both")] }, `mode of "a" must be 'exclusive' or 'shared'`],
      [{ holder: "w", resources: [r("a"), r(" a ")] }, 'resources[1].key repeats resources[0].key "a" (keys compare after trimming white space)'],
      [{ holder: "w", resources: [r("a")], scope: "" }, "scope must not be empty"],
      [{ holder: "w", resources: [r("a")], ttlMs: 0 }, "ttlMs must be a whole number of ms from 1 to 3155760000000 (MAX_TTL_MS, 100 years)"],
      [{ holder: "w", resources: [r("a")], ttlMs: 1.5 }, "ttlMs must be a whole number of ms from 1 to 3155760000000 (MAX_TTL_MS, 100 years)"],
      [{ holder: "w", resources: [r("a")], label: 4 }, "label must be a string of at most 4096 code units"],
      [{ holder: "w", resources: [r("a")], label: "l".repeat(4097) }, "label must be a string of at most 4096 code units"],
    ];
    for (const [request, invalid] of cases) {
      expect(t.take(request as TakeRequest, 1), JSON.stringify(request)?.slice(0, 80)).toEqual({ ok: false, blocked: [], invalid });
      expect(t.wouldRefuse(request as TakeRequest, 1)).toBeUndefined(); // malformed: nothing to judge
    }
    expect(t.encode()).toBe('{"format":"heddle-claims/1","now":1,"lastToken":0}');
    expect(t.take({ holder: "w", resources: [r("a")] }, 1, 0)).toEqual({ ok: false, blocked: [], invalid: "token must be a safe integer above 0, got 0" });
    // the edges, accepted
    expect(t.take({ holder: "h".repeat(1024), resources: Array.from({ length: 256 }, (_, i) => r(`k${i}`)), ttlMs: 1, label: "l".repeat(4096) }, 1).ok).toBe(true);
  });

  it("a time is whole milliseconds in 0 … 2^53 − 1", () => {
    const t = createClaims();
    const take = (now: number) => () => t.take({ holder: "w", resources: [{ key: "a", mode: "shared" }] }, now);
    expect(thrown(take(-1))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(thrown(take(2 ** 53))).toBe(`RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got ${2 ** 53}`);
    expect(thrown(take(Number.NaN))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got NaN");
    expect(thrown(() => t.renew("w", "a", -1))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(thrown(() => t.wouldRefuse({ holder: "w", resources: [{ key: "a", mode: "shared" }] }, -1))).toBe("RangeError: now must be a number of milliseconds in 0 … 2^53 − 1, got -1");
    expect(thrown(take(7.9))).toBe("accepted");
    expect(t.encode()).toContain('"now":7,');
    expect(thrown(take(2 ** 53 - 1))).toBe("accepted");
    expect(t.encode()).toContain(`"now":${2 ** 53 - 1},`);
  });
});

describe("slot decoders name what is wrong", () => {
  const slot = (o: Record<string, unknown>, format = "heddle-advisory/1") => JSON.stringify({ format, peer: "p1", version: "3", claims: [], ...o });

  it("the envelope, for both formats", () => {
    for (const [decode, f] of [
      [decodeAdvisorySlot, "heddle-advisory/1"],
      [decodeKeeperSlot, "heddle-keeper/1"],
    ] as const) {
      const E = (why: string) => `ClaimsDecodeError: ${f} slot: ${why}`;
      const cases: [unknown, string][] = [
        [5, E("input must be a string")],
        ["{", E("not JSON")],
        ["[]", E("not an object")],
        ["null", E("not an object")],
        [slot({ extra: 1 }, f), E("fields must be exactly format, peer, version, claims")],
        [JSON.stringify({ format: f, peer: "p1", version: "3", claim: [] }), E("fields must be exactly format, peer, version, claims")],
        [JSON.stringify({ format: f, peer: "p1", version: "3" }), E("fields must be exactly format, peer, version, claims")],
        [slot({ format: "heddle-other/1" }, f), E(`format must be "${f}"`)],
        [slot({ peer: "" }, f), E("peer must not be empty")],
        [slot({ peer: 1 }, f), E("peer must be a string")],
        [slot({ version: "01" }, f), E("version must be a canonical decimal string")],
        [slot({ version: 3 }, f), E("version must be a canonical decimal string")],
        [slot({ version: "-1" }, f), E("version must be a canonical decimal string")],
        [slot({ version: "12345678901234567890" }, f), E("version must be a canonical decimal string")],
        [slot({ version: "9223372036854775808" }, f), E("version above 2^63 − 1")],
        [slot({ claims: {} }, f), E("claims must be a list")],
      ];
      for (const [text, message] of cases) expect(thrown(() => decode(text as string)), String(text)).toBe(message);
      expect(decode(slot({ version: "9223372036854775807" }, f)).version).toBe(9223372036854775807n);
      expect(decode(slot({ version: "0" }, f)).version).toBe(0n);
      const long = (() => {
        try {
          decode(slot({ peer: "p".repeat(512 * 1024) }, f));
        } catch (e) {
          return e as ClaimsDecodeError;
        }
      })();
      expect([long?.message, long?.bound]).toEqual([`${f} slot: longer than 524288 code units`, "text"]);
      const many = (() => {
        try {
          decode(slot({ claims: Array.from({ length: 4097 }, () => 0) }, f));
        } catch (e) {
          return e as ClaimsDecodeError;
        }
      })();
      expect([many?.message, many?.bound]).toEqual([`${f} slot: more than 4096 claims`, "claims"]);
    }
  });

  it("advisory rows", () => {
    const E = (why: string) => `ClaimsDecodeError: heddle-advisory/1 slot: ${why}`;
    const rows = (claims: unknown[]) => slot({ claims });
    const cases: [string, string][] = [
      [rows([["a", 1]]), E("each claim must be a list of 3 fields")],
      [rows(["a"]), E("each claim must be a list of 3 fields")],
      [rows([["", 1, 2]]), E("item must not be empty")],
      [rows([["b", 1, 2], ["a", 1, 2]]), E("items must be sorted and unique")],
      [rows([["a", 1, 2], ["a", 1, 2]]), E("items must be sorted and unique")],
      [rows([["a", -1, 2]]), E("claimedAt must be a safe integer ≥ 0")],
      [rows([["a", 1, 1.5]]), E("expiresAt must be a safe integer ≥ 0")],
      [rows([["a", 2, 2]]), E("expiresAt must be after claimedAt")],
      [rows([["a", 3, 2]]), E("expiresAt must be after claimedAt")],
    ];
    for (const [text, message] of cases) expect(thrown(() => decodeAdvisorySlot(text)), text).toBe(message);
    expect(decodeAdvisorySlot(rows([["a", 0, 1], ["b", 2, 3]])).claims).toEqual([
      { item: "a", peer: "p1", claimedAt: 0, expiresAt: 1 },
      { item: "b", peer: "p1", claimedAt: 2, expiresAt: 3 },
    ]);
  });

  it("keeper rows", () => {
    const f = "heddle-keeper/1";
    const E = (why: string) => `ClaimsDecodeError: ${f} slot: ${why}`;
    const rows = (claims: unknown[]) => slot({ claims }, f);
    const ok = ["p", 5, 5, 6, null, null, null];
    const at = (i: number, v: unknown) => rows([ok.map((x, j) => (j === i ? v : x))]);
    const cases: [string, string][] = [
      [rows([["p", 1, 2]]), E("each claim must be a list of 7 fields")],
      [rows(["p"]), E("each claim must be a list of 7 fields")],
      [at(0, ""), E("part must not be empty")],
      [rows([["q", 5, 5, 6, null, null, null], ok]), E("parts must be sorted and unique")],
      [rows([ok, ok]), E("parts must be sorted and unique")],
      [at(1, -1), E("claimedAt must be a safe integer ≥ 0")],
      [at(2, "5"), E("renewedAt must be a safe integer ≥ 0")],
      [at(3, 1.5), E("activeAt must be a safe integer ≥ 0")],
      [at(2, 4), E("renewedAt before claimedAt")],
      [at(4, -1), E("takenAt must be a safe integer ≥ 0")],
      [at(5, -1), E("closedAt must be a safe integer ≥ 0")],
      [at(5, 4), E("closedAt before claimedAt")],
      [at(6, "x"), E("wroteUpTo must be a safe integer ≥ 0")],
    ];
    for (const [text, message] of cases) expect(thrown(() => decodeKeeperSlot(text)), text).toBe(message);
    expect(decodeKeeperSlot(rows([["p", 5, 5, 0, 7, 5, 9]])).claims).toEqual([
      { part: "p", peer: "p1", claimedAt: 5, renewedAt: 5, activeAt: 0, takenAt: 7, closedAt: 5, wroteUpTo: 9 },
    ]);
    expect(decodeKeeperSlot(rows([ok])).claims).toEqual([{ part: "p", peer: "p1", claimedAt: 5, renewedAt: 5, activeAt: 6 }]);
  });
});

describe("the guarantee each mode's answers carry", () => {
  it("says what the mode promises (claims.md's table)", () => {
    expect(Object.keys(CLAIM_GUARANTEES).sort()).toEqual(["advisory", "granted", "keeper"]);
    expect(CLAIM_GUARANTEES.granted).toMatch(/^linearizable and fenced: .*fencing token/);
    expect(CLAIM_GUARANTEES.keeper).toMatch(/^a lease by one peer with settling: .*mayAct/);
    expect(CLAIM_GUARANTEES.advisory).toMatch(/^best effort, no exclusion: .*claims expire$/);
    expect(Object.isFrozen(CLAIM_GUARANTEES)).toBe(true);
  });
});
