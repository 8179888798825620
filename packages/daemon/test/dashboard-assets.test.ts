import { readFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserModules, MODULES_PREFIX, PAGE_IMPORTS, staticImports } from "../src/dashboard-assets.ts";
import { soloDaemon } from "./support/embedded.ts";

let s: Awaited<ReturnType<typeof soloDaemon>>;
beforeAll(async () => {
  s = await soloDaemon();
});
afterAll(() => s.close());

describe("the dashboard's browser modules", () => {
  it("form a closed graph: every static import of every served module is served, bare ones through the import map", () => {
    const m = browserModules();
    const map = (JSON.parse(m.importMap) as { imports: Record<string, string> }).imports;
    for (const spec of PAGE_IMPORTS) expect(map[spec]).toMatch(new RegExp(`^${MODULES_PREFIX}`));
    for (const [url, file] of m.files) {
      for (const spec of staticImports(readFileSync(file, "utf8"))) {
        const target = spec.startsWith(".") ? new URL(spec, `http://x${url}`).pathname : map[spec];
        expect(target, `${url} imports ${spec}`).toBeDefined();
        expect(m.files.has(target!), `${url} imports ${spec} → ${target}`).toBe(true);
      }
    }
    // lib0's browser variants, not its node ones
    expect(map["lib0/webcrypto"]).toMatch(/\/webcrypto\.js$/);
    expect([...m.files.keys()].some((u) => u.includes(".node."))).toBe(false);
  });

  it("reads imports at statement starts only (a JSDoc import() type is not an import)", () => {
    expect(staticImports(`import * as a from 'lib0/a'\nexport { b } from "./b.js"\nimport './side.js'\nimport {\n  c,\n  d\n} from 'lib0/c'\n/** @type {import('lib0/x').Y} */\nexport const e = 1`)).toEqual(["lib0/a", "./b.js", "./side.js", "lib0/c"]);
  });

  it("serves the page and the graph's modules without a token, nothing else", async () => {
    const page = await fetch(`${s.daemon.url}/dashboard`);
    expect(page.status).toBe(200);
    const html = await page.text();
    const script = /<script type="importmap">(.*?)<\/script>/s.exec(html)![1]!;
    const csp = page.headers.get("content-security-policy")!;
    expect(csp).toContain(`'sha256-${createHash("sha256").update(script).digest("base64")}'`);
    expect(csp).toContain("default-src 'none'");
    const m = browserModules();
    const [url] = [...m.files.keys()];
    const mod = await fetch(`${s.daemon.url}${url}`);
    expect(mod.status).toBe(200);
    expect(mod.headers.get("content-type")).toMatch(/^text\/javascript/);
    expect(await mod.text()).toBe(readFileSync(m.files.get(url!)!, "utf8"));
    for (const path of [`${MODULES_PREFIX}lib0@0.2.120/package.json`, `${MODULES_PREFIX}lib0@0.2.120/../../../package.json`, `${MODULES_PREFIX}lib0@0.2.120/crypto/jwt.js`, `${MODULES_PREFIX}lib0@9.9.9/encoding.js`]) {
      const r = await fetch(`${s.daemon.url}${path}`);
      expect([401, 404], path).toContain(r.status);
    }
    for (const f of ["/dashboard/app.js", "/dashboard/style.css", "/dashboard/favicon.svg"]) expect((await fetch(`${s.daemon.url}${f}`)).status).toBe(200);
    // the API, /metrics and writes under /dashboard still need the token
    expect((await fetch(`${s.daemon.url}/v1/status`)).status).toBe(401);
    expect((await fetch(`${s.daemon.url}/metrics`)).status).toBe(401);
    expect((await fetch(`${s.daemon.url}/dashboard`, { method: "POST" })).status).toBe(401);
  });
});
