// The README's reference sections say what the code does: the route table against the routes the API serves (its
// own /openapi.json, built from the schemas that validate), with the body fields and query parameters it names; the
// metrics table against a scrape of /metrics; the config table against PeerConfigSchema, with the defaults it states;
// and the config errors it quotes.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CONFIG_DEFAULTS, initCluster, parseConfig, PeerConfigSchema } from "../src/index.ts";
import { DEFAULT_RAFT_CONFIG } from "@heddle/governed";
import { RAFT_TIMING_DEFAULTS } from "../src/config.ts";
import { soloDaemon, type SoloDaemon } from "./support/embedded.ts";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

/** One static peer, for what it serves: /openapi.json and /metrics. */
let s: SoloDaemon;
beforeAll(async () => {
  s = await soloDaemon({ tree: "batch=1" });
}, 60_000);
afterAll(async () => {
  await s?.close();
});

/** The rows of the markdown table whose header row starts with `| first |`: each row's cells. */
function tableRows(first: string): string[][] {
  const lines = README.split("\n");
  const at = lines.findIndex((l) => l.startsWith(`| ${first} |`));
  if (at < 0) throw new Error(`the README has no table headed "| ${first} |"`);
  const rows: string[][] = [];
  for (const l of lines.slice(at + 2)) {
    if (!l.startsWith("|")) break;
    // cells split on | that is not escaped (\| inside a cell)
    rows.push(l.slice(1, -1).split(/(?<!\\)\|/).map((c) => c.trim().replaceAll("\\|", "|")));
  }
  return rows;
}

/** `a/{x,y}/b` → `a/x/b`, `a/y/b` (one brace group). */
function expand(s: string): string[] {
  const m = /\{([^{}]+)\}/.exec(s);
  if (m === null) return [s];
  return m[1]!.split(",").map((alt) => s.slice(0, m.index) + alt.trim() + s.slice(m.index + m[0].length));
}

describe("the route table", () => {
  interface Route {
    body?: { fields: string[]; required: string[] };
    query: string[];
  }

  /** Routes as the README's table documents them: "METHOD path" → body fields ("x?" optional) and query names. */
  function documented(): Map<string, Route> {
    const routes = new Map<string, Route>();
    for (const row of tableRows("Route")) {
      // a route in backticks, optionally followed at once by its body in backticks: `POST /v1/x` `{a, b?}`
      for (const m of row.join(" | ").matchAll(/`((?:GET|POST|PUT|DELETE) [^`]+)`(?:\s+`(\{[^`]*\})`)?/g)) {
        const [method, target] = [m[1]!.slice(0, m[1]!.indexOf(" ")), m[1]!.slice(m[1]!.indexOf(" ") + 1)];
        const [path, query] = [target.split("?")[0]!, target.includes("?") ? target.slice(target.indexOf("?") + 1) : ""];
        const names = [...query.matchAll(/(\w+)=/g)].map((q) => q[1]!);
        // `{a, b?, c | d}`: a required, b optional, one of c and d (each optional in the schema)
        const pieces = m[2]?.slice(1, -1).split(",").map((f) => f.trim()).filter((f) => f !== "");
        const body =
          pieces === undefined
            ? undefined
            : {
                fields: pieces.flatMap((f) => f.split("|").map((x) => x.trim().replace(/\?$/, ""))).sort(),
                required: pieces.filter((f) => !f.endsWith("?") && !f.includes("|")).sort(),
              };
        for (const p of expand(path)) routes.set(`${method} ${p}`, { query: names, ...(body !== undefined ? { body } : {}) });
      }
    }
    return routes;
  }

  /** Routes as the API serves them. */
  async function served(): Promise<Map<string, { body?: { fields: string[]; required: string[] }; query: string[] }>> {
    const doc = (await s.client.call("GET", "/openapi.json")) as any;
    const deref = (x: any): any => (x?.$ref !== undefined ? doc.components.schemas[String(x.$ref).split("/").pop()!] : x);
    const routes = new Map<string, { body?: { fields: string[]; required: string[] }; query: string[] }>();
    for (const [path, ops] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(ops)) {
        const schema = deref(op.requestBody?.content?.["application/json"]?.schema);
        const props = schema?.properties ?? Object.assign({}, ...((schema?.anyOf ?? []) as any[]).map((b) => deref(b).properties ?? {}));
        const required: string[] = schema?.required ?? [];
        routes.set(`${method.toUpperCase()} ${path}`, {
          query: ((op.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === "query").map((p) => p.name),
          ...(schema !== undefined ? { body: { fields: Object.keys(props).sort(), required: [...required].sort() } } : {}),
        });
      }
    }
    return routes;
  }

  it("lists every route the API serves, and no other", async () => {
    expect([...documented().keys()].sort()).toEqual([...(await served()).keys()].sort());
  });

  it("names each body field and query parameter the route takes (optional ones marked ?)", async () => {
    const real = await served();
    for (const [route, doc] of documented()) {
      const r = real.get(route)!;
      if (doc.body !== undefined) {
        expect(doc.body.fields, `${route}: body fields`).toEqual(r.body?.fields);
        expect(doc.body.required, `${route}: required body fields (the others marked ?)`).toEqual(r.body?.required);
      }
      if (doc.query.length > 0) expect(doc.query.sort(), `${route}: query parameters`).toEqual([...r.query].sort());
    }
  });
});

describe("the metrics table", () => {
  it("lists every metric family a scrape has, and a static peer serves all but the governed-only ones", async () => {
    const rows = tableRows("Metric").map(([names, , , what]) => ({ names: [...names!.matchAll(/`(heddle_[a-z_]+)`/g)].map((m) => m[1]!), governedOnly: /^governed only/.test(what ?? "") }));
    const documented = new Set(rows.flatMap((r) => r.names));
    const text = await (await fetch(`${s.daemon.url}/metrics`, { headers: { authorization: `Bearer ${s.daemon.token}` } })).text();
    // prom-client's process metrics are documented as heddle_process_* and heddle_nodejs_*
    const scraped = [...text.matchAll(/^# TYPE (heddle_\w+) /gm)].map((m) => m[1]!).filter((n) => !/^heddle_(process|nodejs)_/.test(n));
    expect(scraped.filter((n) => !documented.has(n)), "scraped but not in the table").toEqual([]);
    const expected = rows.filter((r) => !r.governedOnly).flatMap((r) => r.names);
    expect(expected.filter((n) => !scraped.includes(n)), "in the table but not scraped from a static peer").toEqual([]);
  });
});

describe("the config table", () => {
  /**
   * Every key path of the schema (objects descended into, arrays by their items, unions' members merged; a record's
   * keys are the user's), or with `leaves` only those that hold a value rather than more keys.
   */
  function schemaPaths(schema: any, leaves = false, prefix = ""): string[] {
    const out = new Set<string>();
    for (const m of (schema.anyOf ?? [schema]) as any[]) {
      const inner = m.type === "array" ? m.items : m;
      for (const [k, v] of Object.entries<any>(inner.properties ?? {})) {
        const p = prefix === "" ? k : `${prefix}.${k}`;
        const below = schemaPaths(v, leaves, p);
        if (!leaves || below.length === 0) out.add(p);
        for (const q of below) out.add(q);
      }
    }
    return [...out];
  }

  const rows = tableRows("Key").map(([key, meaning, dflt]) => ({
    // `a.b`, `a.{x, y}`, `node.*`, `roster[]` → the key paths a row documents
    keys: [...key!.matchAll(/`([^`]+)`/g)].flatMap((m) => expand(m[1]!.replace(/\[\]$/, "").replace(/\.\*$/, ""))),
    text: `${key} ${meaning}`,
    dflt: dflt ?? "",
  }));

  it("every key of the schema is documented: by its own row, or named in the row of the key it sits under", () => {
    const undocumented: string[] = [];
    for (const p of schemaPaths(PeerConfigSchema, true)) {
      const row = rows
        .filter((r) => r.keys.some((k) => p === k || p.startsWith(`${k}.`)))
        .sort((a, b) => Math.max(...b.keys.filter((k) => p === k || p.startsWith(`${k}.`)).map((k) => k.length)) - Math.max(...a.keys.filter((k) => p === k || p.startsWith(`${k}.`)).map((k) => k.length)))[0];
      const base = row?.keys.filter((k) => p === k || p.startsWith(`${k}.`)).sort((a, b) => b.length - a.length)[0];
      const rest = base === undefined ? p.split(".") : p.slice(base.length).split(".").filter((x) => x !== "");
      if (row === undefined || !rest.every((seg) => new RegExp(`\\b${seg}\\b`).test(row.text))) undocumented.push(p);
    }
    expect(undocumented).toEqual([]);
  });

  it("every key the table documents is in the schema", () => {
    const known = new Set(schemaPaths(PeerConfigSchema));
    expect(rows.flatMap((r) => r.keys).filter((k) => !known.has(k))).toEqual([]);
  });

  it("states the defaults the daemon uses", () => {
    const dflt = (key: string) => rows.find((r) => r.keys.includes(key))!.dflt;
    const numbers = (text: string) => [...text.replace(/(\d) (\d{3})/g, "$1$2").matchAll(/\d+/g)].map((m) => Number(m[0]));
    for (const [k, v] of Object.entries(CONFIG_DEFAULTS.limits)) expect(numbers(dflt(`limits.${k}`)), `limits.${k}`).toEqual([v]);
    expect(numbers(dflt("scheduler.intervalMs"))).toEqual([CONFIG_DEFAULTS.schedulerIntervalMs]);
    expect(numbers(dflt("mode.raft"))).toEqual([RAFT_TIMING_DEFAULTS.electionTimeoutMinMs, RAFT_TIMING_DEFAULTS.electionTimeoutMaxMs, RAFT_TIMING_DEFAULTS.heartbeatMs, DEFAULT_RAFT_CONFIG.snapshotMaxBytes / 2 ** 20]);
    expect(dflt("mode.raft")).toMatch(/ MiB$/);
    expect(dflt("log.format")).toBe(`\`${CONFIG_DEFAULTS.log.format}\`, \`${CONFIG_DEFAULTS.log.level}\``);
  });

  it("quotes the errors a bad file really gets", async () => {
    const dir = mkdtempSync(join(tmpdir(), "heddle-readme-config-"));
    try {
      const [peer] = await initCluster({ dir: join(dir, "c"), peers: 1, mode: "static" });
      const doc = JSON.parse(readFileSync(peer!.config, "utf8"));
      // the three mistakes the README's example messages describe
      doc.api.listen = 7201;
      doc.store.path = "x";
      delete doc.identity;
      let message = "";
      try {
        parseConfig(doc, peer!.config);
      } catch (e) {
        message = (e as Error).message;
      }
      const at = README.indexOf("Every problem is reported with the field it concerns");
      const quoted = [...README.slice(at, README.indexOf("all of them at once", at)).matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\s+/g, " "));
      expect(quoted).toHaveLength(3);
      for (const q of quoted) {
        const pattern = new RegExp(`^${q.split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join(".*")}$`, "m");
        expect(message, q).toMatch(pattern);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
