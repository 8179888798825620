// Command-line mistakes in the API commands are usage errors (exit 2) caught before anything is sent, with messages in
// the user's units; and what is sent is what the user typed (no rounding). Against a fake daemon that records requests.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { MAX_IDEMPOTENCY_KEY_LENGTH as DAEMON_MAX_KEY } from "@heddle/daemon";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "../src/commands/api-commands.ts";
import { EXIT } from "../src/exit-codes.ts";
import { fakeDaemon, run, type FakeDaemon } from "./support/fake-daemon.ts";

let d: FakeDaemon;
beforeAll(async () => {
  d = await fakeDaemon();
});
afterAll(() => d.close());
beforeEach(() => {
  d.seen.length = 0;
  d.answer = () => ({ status: 200, body: { kind: "applied", index: 1, noop: false, key: { client: "c", seq: 1 } } });
});

const at = (argv: string[]) => run([...argv, "--url", d.url, "--token", "t"]);

/** Runs `argv`, expects a usage error matching `re`, and that nothing reached the daemon. */
async function usage(argv: string[], re: RegExp): Promise<void> {
  const r = await at(argv);
  expect(r.code, `${argv.join(" ")}: ${r.err}`).toBe(EXIT.usage);
  expect(r.err).toMatch(re);
  expect(d.seen, argv.join(" ")).toHaveLength(0);
}

describe("--idempotency-key", () => {
  it("the CLI's limit is the daemon's", () => {
    expect(MAX_IDEMPOTENCY_KEY_LENGTH).toBe(DAEMON_MAX_KEY);
  });
  it.each([["supply→1"], ["two words"], [""], ["x".repeat(201)]])("%j is a usage error saying what is allowed", async (key) => {
    await usage(["mint", "1000", "--idempotency-key", key], /--idempotency-key must be 1 … 200 visible ASCII characters/);
  });
  it("a visible-ASCII key of 200 characters is sent as the header", async () => {
    const key = `supply-1:${"x".repeat(191)}`;
    const r = await at(["mint", "1000", "--holder", "peer-x", "--idempotency-key", key]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(d.seen[0]!.headers["idempotency-key"]).toBe(key);
  });
});

describe("a keyed mint or enroll names its holder / replica (the daemon refuses one left to default)", () => {
  const SELF = "12D3KooWFakeSelf";
  beforeEach(() => {
    d.answer = (req) => (req.url === "/v1/status" ? { status: 200, body: { self: SELF } } : { status: 200, body: { kind: "applied", index: 1, noop: false, key: { client: "c", seq: 1 } } });
  });
  const posts = () => d.seen.filter((x) => x.method === "POST").map((x) => ({ url: x.url, body: JSON.parse(x.body), key: x.headers["idempotency-key"] }));

  it("mint --idempotency-key without --holder sends this peer's id (from GET /v1/status) as holder", async () => {
    const r = await at(["mint", "1000", "--idempotency-key", "k1"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(posts()).toEqual([{ url: "/v1/control/mint", body: { amount: "1000", holder: SELF }, key: "k1" }]);
  });
  it("enroll --idempotency-key without PEER_ID sends this peer's id as replica", async () => {
    const r = await at(["enroll", "--idempotency-key", "k2"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(posts()).toEqual([{ url: "/v1/control/enroll", body: { replica: SELF }, key: "k2" }]);
  });
  it("a named holder is sent as given, and calls without a key leave the default to the daemon (no status call)", async () => {
    expect((await at(["mint", "5", "--holder", "peer-x", "--idempotency-key", "k3"])).code).toBe(EXIT.ok);
    expect((await at(["mint", "6"])).code).toBe(EXIT.ok);
    expect((await at(["enroll"])).code).toBe(EXIT.ok);
    expect(d.seen.some((x) => x.url === "/v1/status")).toBe(false);
    expect(posts()).toEqual([
      { url: "/v1/control/mint", body: { amount: "5", holder: "peer-x" }, key: "k3" },
      { url: "/v1/control/mint", body: { amount: "6" }, key: undefined },
      { url: "/v1/control/enroll", body: {}, key: undefined },
    ]);
  });
});

describe("numbers above 2^53 are not rounded", () => {
  it("prepare sends a weight above 2^53 as a decimal string, a safe one as a number, a fraction as text", async () => {
    for (const [typed, sent] of [["9007199254740993", "9007199254740993"], ["3", 3], ["3/2", "3/2"], ["9223372036854775807/2", "9223372036854775807/2"]] as const) {
      d.seen.length = 0;
      const r = await at(["prepare", "e1", "root", "a", typed]);
      expect(r.code, r.err).toBe(EXIT.ok);
      expect(JSON.parse(d.seen[0]!.body)).toEqual({ id: "e1", parent: "root", child: "a", weight: sent });
    }
  });
  it.each([["0"], ["1/0"], ["9223372036854775808"], ["2/9223372036854775808"], ["1.5"], ["three"]])("prepare weight %j is a usage error", async (w) => {
    await usage(["prepare", "e1", "root", "a", w], /WEIGHT must be a positive integer/);
  });
  it("--wrote-up-to above 2^53 − 1 is a usage error on keeper and close; at it, it is sent exactly", async () => {
    await usage(["claims", "keeper", "p", "--wrote-up-to", "9007199254740993"], /--wrote-up-to must be at most 9007199254740991/);
    await usage(["claims", "close", "p", "--wrote-up-to", "9007199254740992"], /--wrote-up-to must be at most 9007199254740991/);
    d.answer = () => ({ status: 200, body: { part: "p", closed: [], unheard: [] } });
    expect((await at(["claims", "close", "p", "--wrote-up-to", "9007199254740991", "--json"])).code).toBe(EXIT.ok);
    expect(JSON.parse(d.seen[0]!.body)).toEqual({ part: "p", wroteUpTo: 9007199254740991 });
  });
});

describe("ranges the daemon checks are checked first, in the user's units (exit 2, nothing sent)", () => {
  it("outcome --seq must be a positive integer; the key, or client and seq, not both", async () => {
    await usage(["outcome", "--client", "x", "--seq", "abc"], /--seq must be an integer 1 … 9007199254740991, got "abc"/);
    await usage(["outcome", "--client", "x", "--seq", "0"], /--seq must be an integer/);
    await usage(["outcome", "--client", "x", "--seq", "9007199254740993"], /--seq must be an integer/);
    await usage(["outcome", "--client", "x"], /usage: heddle outcome/);
    await usage(["outcome", "--idempotency-key", "k", "--client", "x", "--seq", "1"], /usage: heddle outcome/);
    d.answer = () => ({ status: 200, body: { outcome: "unknown" } });
    expect((await at(["outcome", "--client", "x", "--seq", "12"])).code).toBe(EXIT.ok);
    expect(d.seen[0]!.url).toBe("/v1/control/outcome?client=x&seq=12");
    // a recorded outcome reads as the verb that made it printed it (it was raw JSON without --json)
    d.answer = () => ({ status: 200, body: { key: { client: "x", seq: 12 }, outcome: { kind: "applied", index: 5, noop: false, mintId: "mint:x:12" } } });
    expect((await at(["outcome", "--client", "x", "--seq", "12"])).out).toBe("applied at index 5, mint mint:x:12\n");
    d.answer = () => ({ status: 200, body: { key: { client: "x", seq: 12 }, outcome: { kind: "conflict", index: 6, conflict: { reason: "keyReuse" } } } });
    expect((await at(["outcome", "--client", "x", "--seq", "12"])).out).toBe("conflict at index 6: keyReuse\n");
  });
  it("demand --lease is 0.1 … 86400 seconds, and says so in seconds", async () => {
    await usage(["demand", "a", "10", "--lease", "86401"], /--lease must be 0\.1 … 86400 seconds \(24 hours\), got "86401"/);
    await usage(["demand", "a", "10", "--lease", "0.05"], /--lease must be 0\.1 … 86400 seconds/);
    await usage(["demand", "a", "10", "--lease", "soon"], /--lease must be 0\.1 … 86400 seconds/);
    d.answer = () => ({ status: 200, body: { edge: "e", standing: null } });
    expect((await at(["demand", "a", "10", "--lease", "86400"])).code).toBe(EXIT.ok);
    expect(JSON.parse(d.seen[0]!.body)).toMatchObject({ leaf: "a", leaseMs: 86_400_000 });
  });
  it("reserve and mint need a positive amount; every amount is at most 2^63 − 1", async () => {
    await usage(["reserve", "a", "0"], /MAXIMUM_COST must be 1 … 9223372036854775807, got 0/);
    await usage(["mint", "0"], /AMOUNT must be 1 … 9223372036854775807/);
    await usage(["complete", "r1", "9223372036854775808"], /ACTUAL_COST must be 0 … 9223372036854775807/);
    await usage(["demand", "a", "99999999999999999999"], /TARGET must be 0 … 9223372036854775807/);
  });
  it("claims take --ttl and claims advisory --ttl are 1 … 604800000 ms (7 days)", async () => {
    await usage(["claims", "take", "k1", "--holder", "h1", "--ttl", "604800001"], /--ttl must be an integer number of milliseconds, 1 … 604800000 \(7 days\), got "604800001"/);
    await usage(["claims", "advisory", "i1", "--ttl", "604800001"], /--ttl must be an integer number of milliseconds/);
    await usage(["claims", "take", "k1", "--holder", "h1", "--ttl", "1e3"], /--ttl must be an integer/);
    d.answer = () => ({ status: 200, body: { claims: { grants: [] } } });
    expect((await at(["claims", "take", "k1", "--holder", "h1", "--ttl", "604800000"])).code).toBe(EXIT.ok);
    expect(JSON.parse(d.seen[0]!.body)).toMatchObject({ ttlMs: 604_800_000 });
  });
});

describe("nothing typed is silently ignored", () => {
  it.each([
    [["bounds", "root", "extra", "junk"], /heddle bounds: unexpected arguments "extra" "junk" \(usage: heddle bounds \[PARENT\]\)/],
    [["tree", "extra"], /heddle tree: unexpected argument "extra"/],
    [["status", "x"], /unexpected argument "x"/],
    [["sync", "x"], /unexpected argument "x"/],
    [["outcome", "x", "--idempotency-key", "k"], /unexpected argument "x"/],
    [["claims", "holders", "a", "b"], /heddle claims holders: unexpected argument "b"/],
    [["demand", "a", "1", "2", "3"], /unexpected argument "3"/],
  ])("%j is a usage error", async (argv, re) => {
    await usage(argv, re);
  });
  it("a single-value option given twice is a usage error naming both values", async () => {
    await usage(["claims", "take", "k1", "--holder", "h1", "--holder", "h2"], /heddle claims take: --holder was given more than once \("h1", "h2"\): give it once/);
    await usage(["reserve", "a", "5", "--idempotency-key=k1", "--idempotency-key", "k2"], /--idempotency-key was given more than once/);
    // the target options too: which daemon must not be a guess
    const r = await run(["status", "--url", d.url, "--url", "http://127.0.0.1:9", "--token", "t"]);
    expect(r.code).toBe(EXIT.usage);
    expect(r.err).toMatch(/--url was given more than once/);
    // and the commands that run peers
    const start = await run(["start", "--config", "a.json", "--config", "b.json"]);
    expect(start.code).toBe(EXIT.usage);
    expect(start.err).toMatch(/^heddle start: --config was given more than once \("a.json", "b.json"\)/);
  });
  it("holdings of a group this peer does not know says so on stderr (the daemon answers zeros)", async () => {
    d.answer = (req) =>
      req.url === "/v1/holdings"
        ? { status: 200, body: { self: "p", groups: [{ group: "root", holdings: "10", available: "10", earmarked: "0", byReplica: { p: "10" } }] } }
        : { status: 200, body: { self: "p", groups: [{ group: req.url.split("=")[1], holdings: "0", available: "0", earmarked: "0", byReplica: {} }] } };
    const r = await at(["holdings", "nosuchgroup"]);
    expect(r.code).toBe(EXIT.ok);
    expect(r.out).toMatch(/nosuchgroup\s+0/);
    expect(r.err).toBe(`heddle holdings: "nosuchgroup" is not a group in this peer's tree (heddle tree shows them): nothing is held there\n`);
    d.answer = (req) => ({ status: 200, body: { self: "p", groups: req.url === "/v1/holdings" ? [{ group: "empty" }] : [{ group: "empty", holdings: "0", available: "0", earmarked: "0", byReplica: {} }] } });
    expect((await at(["holdings", "empty"])).err).toBe("");
  });
});

describe("claims holders", () => {
  it("the table's mine column says which items this peer holds when listing every item", async () => {
    d.answer = (req) =>
      req.url === "/v1/peers"
        ? { status: 200, body: { peers: [{ id: "12D3KooWself", self: true }, { id: "12D3KooWother", self: false }] } }
        : {
            status: 200,
            body: {
              mode: "advisory",
              guarantee: "best effort",
              holders: [
                { item: "i1", holder: "12D3KooWself" },
                { item: "i2", holder: "12D3KooWother" },
              ],
              duplicates: [],
            },
          };
    const r = await at(["claims", "holders"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(r.out).toMatch(/^i1\s+12D3KooWself\s+yes\s+-$/m);
    expect(r.out).toMatch(/^i2\s+12D3KooWother\s+no\s+-$/m);
  });
});

/** A daemon whose `GET /v1/status` is a governed peer with `control` as its control part (and `/v1/peers` itself alone). */
const statusOf =
  (control: object) =>
  (req: { url?: string }): { status: number; body: unknown } =>
    req.url === "/v1/peers"
      ? { status: 200, body: { peers: [{ id: "12D3KooWself", self: true, connected: true, unreachable: false, lastLiveness: null }] } }
      : {
          status: 200,
          body: { self: "12D3KooWself", mode: "governed", epoch: 3, ledgerDigest: "d", mintedTotal: "0", leafSpentTotal: "0", conflicts: [], reservationsOpen: 0, schedulerTicks: 1, failed: false, control },
        };

describe("heddle status on a halted control plane", () => {
  it("prints the halt and the config keys to fix", async () => {
    d.answer = statusOf({
      role: "follower", leader: null, appliedIndex: 4, isWritable: false, enrolled: [],
      halted: { index: 5, message: "claims.capacity differs from the log's", settings: [{ setting: "claims.capacity", configKey: "mode.claims.capacity" }] },
    });
    const r = await run(["status", "--url", d.url, "--token", "t"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(r.out).toContain("HALTED    at index 5: claims.capacity differs from the log's");
    expect(r.out).toContain("fix mode.claims.capacity in this peer's config");
  });
});

describe("heddle status on a member that cannot install its leader's snapshot", () => {
  it("prints each stall's message, which names the config key and the size to raise it to", async () => {
    const message = "the snapshot leader 12D3KooWlead sends (through index 900, 70000000 bytes) is above this member's mode.raft.snapshotMaxBytes (67108864): it is refused and this member cannot catch up — raise mode.raft.snapshotMaxBytes to at least 70000000 on this member";
    d.answer = statusOf({
      role: "follower", leader: "12D3KooWlead", appliedIndex: 4, isWritable: true, enrolled: [], halted: null,
      snapshotStalls: [{ side: "receiving", peer: "12D3KooWlead", snapshotBytes: 70_000_000, snapshotMaxBytes: 67_108_864, message }],
    });
    const r = await run(["status", "--url", d.url, "--token", "t"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(r.out).toContain(`STALLED   ${message}`);
  });
});

describe("the command line itself (found by a new user's walkthrough)", () => {
  it("claims list shows when each claim began as a time, not epoch milliseconds", async () => {
    d.answer = () => ({ status: 200, body: { open: [{ key: "lock", holder: "h1", mode: "exclusive", token: 7, since: 1_796_404_039_895, scope: null }], guarantee: "g" } });
    const r = await run(["claims", "list", "--url", d.url, "--token", "t"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(r.out).toContain(new Date(1_796_404_039_895).toISOString());
    expect(r.out).not.toContain("1796404039895");
  });
  it("no command is a usage error (exit 2) that prints the usage; --version prints the version", async () => {
    const bare = await run([]);
    expect(bare.code).toBe(EXIT.usage);
    expect(bare.err).toMatch(/^heddle — /);
    const v = await run(["--version"]);
    expect(v.code).toBe(EXIT.ok);
    expect(v.out).toMatch(/^heddle \d+\.\d+\.\d+ \(node v\d+/);
  });
  it("a config file that does not exist says how to get one; an unreachable daemon says how to start it once", async () => {
    const missing = await run(["status", "--config", "/nonexistent/peer-1/heddle.json"]);
    expect(missing.code).toBe(EXIT.config);
    expect(missing.err).toContain("(file): does not exist; heddle init DIR writes one per peer");
    const gone = await run(["status", "--url", "http://127.0.0.1:1", "--token", "t"]);
    expect(gone.code).toBe(EXIT.unreachable);
    expect(gone.err.match(/start it with/g)).toHaveLength(1);
    expect(gone.err).toContain("heddle up DIR");
    // with --json the outcome is on stdout too, as every API answer is
    const goneJson = await run(["status", "--url", "http://127.0.0.1:1", "--token", "t", "--json"]);
    expect(goneJson.code).toBe(EXIT.unreachable);
    expect(JSON.parse(goneJson.out)).toMatchObject({ error: "unreachable", code: "ECONNREFUSED", url: "http://127.0.0.1:1" });
  });
  it("an unknown option is named as such, and a negative number is said to be one", async () => {
    const typo = await run(["tree", "--jsn", "--url", d.url, "--token", "t"]);
    expect(typo.code).toBe(EXIT.usage);
    expect(typo.err).toBe("heddle tree: unknown option --jsn (heddle tree --help lists the options)\n");
    const negative = await run(["mint", "-5", "--url", d.url, "--token", "t"]);
    expect(negative.code).toBe(EXIT.usage);
    expect(negative.err).toContain("-5 looks like a negative number");
    expect(d.seen).toHaveLength(0);
  });
});

// governed.md §3.4 applies a prepare under a parent that does not hang under the root (a subtree built before it is
// attached), and the daemon does too; the CLI says what that means, so a mistyped PARENT does not pass unnoticed.
describe("prepare under a parent that does not hang under the root", () => {
  const tree = (parentDetached: boolean) => ({
    root: "root",
    edges: [{ id: "e9", parent: "stagng", child: "batch", lifecycle: "PREPARED" }],
    groups: [
      { group: "root", detached: false },
      { group: "stagng", detached: parentDetached },
      { group: "batch", detached: true },
    ],
  });
  const answering = (parentDetached: boolean) => (req: { url: string }) =>
    req.url.startsWith("/v1/tree") ? { status: 200, body: tree(parentDetached) } : { status: 200, body: { kind: "applied", index: 7, noop: false, key: null } };

  it("is applied (exit 0), with a note naming the parent, the root and how to abandon the edge", async () => {
    d.answer = answering(true);
    const r = await at(["prepare", "e9", "stagng", "batch", "1"]);
    expect(r.code, r.err).toBe(EXIT.ok);
    expect(r.out).toBe("prepare e9: applied at index 7\n");
    expect(r.err).toBe(
      "heddle: note: stagng does not hang under the root (root) on this peer's view, so batch stays detached — it reads 0 and takes no work — until stagng is attached (heddle reshape stagng); if stagng is a typo, heddle retire e9 abandons the edge\n",
    );
  });
  it("says nothing when the parent is attached, nor with --json", async () => {
    d.answer = answering(false);
    expect((await at(["prepare", "e9", "stagng", "batch", "1"])).err).toBe("");
    d.answer = answering(true);
    const j = await at(["prepare", "e9", "stagng", "batch", "1", "--json"]);
    expect(j.err).toBe("");
    expect(JSON.parse(j.out)).toMatchObject({ kind: "applied", index: 7 });
  });
});

describe("claims values longer than the daemon's schemas allow are usage errors, nothing sent", () => {
  it.each([
    ["--label over 256 characters", ["claims", "take", "db/schema", "--holder", "h", "--label", "x".repeat(257)], /--label must be at most 256 characters, got 257/],
    ["a KEY over 512 characters", ["claims", "take", "k".repeat(513), "--holder", "h"], /KEY must be 1 … 512 characters, got 513/],
    ["--holder over 256", ["claims", "take", "db/schema", "--holder", "h".repeat(257)], /--holder must be 1 … 256 characters, got 257/],
    ["--scope over 256", ["claims", "take", "db/schema", "--holder", "h", "--scope", "s".repeat(257)], /--scope must be 1 … 256 characters/],
    ["more than 256 keys in one take", ["claims", "take", ...Array.from({ length: 257 }, (_, i) => `k${i}`), "--holder", "h"], /at most 256 keys, got 257/],
    ["a release KEY over 512", ["claims", "release", "k".repeat(513), "--holder", "h"], /KEY must be 1 … 512 characters/],
    ["a renew --holder over 256", ["claims", "renew", "k", "--holder", "h".repeat(257)], /--holder must be 1 … 256 characters/],
    ["an advisory ITEM over 1024", ["claims", "advisory", "i".repeat(1025)], /ITEM must be 1 … 1024 characters, got 1025/],
    ["a keeper PART over 1024", ["claims", "keeper", "p".repeat(1025)], /PART must be 1 … 1024 characters/],
    ["claims next with 4097 items", ["claims", "next", ...Array.from({ length: 4097 }, (_, i) => `i${i}`)], /at most 4096 items, got 4097/],
    ["claims next with an ITEM over 1024", ["claims", "next", "a", "i".repeat(1025)], /ITEM must be 1 … 1024 characters/],
  ])("%s", async (_what, argv, re) => {
    await usage(argv as string[], re as RegExp);
  });
  it("values at the limits are sent as typed (counted in characters, not UTF-16 units)", async () => {
    d.answer = () => ({ status: 200, body: { claims: { ok: true, grants: [] } } });
    const key = "é".repeat(512);
    const r = await at(["claims", "take", key, "--holder", "😀".repeat(256), "--label", "l".repeat(256)]);
    expect(r.code, r.err).toBe(EXIT.ok);
    const body = JSON.parse(d.seen[0]!.body);
    expect(body.resources[0].key).toBe(key);
    expect([...body.holder].length).toBe(256);
  });
});
