// The dashboard's static assets: the page (plain HTML, CSS and an ES module under packages/daemon/dashboard)
// and the browser builds of yjs, y-websocket, y-protocols and lib0, served as the ES modules those packages
// ship in node_modules — no bundler, no build step. The page finds them through an import map computed here
// once: starting from the page's bare imports, each module's static imports are followed, bare ones
// resolved through their package's `exports` with the browser conditions. Only the files of that graph are
// servable; the URLs carry each package's version, so browsers may cache them for good.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the page's own files live. */
export const DASHBOARD_PAGE_DIR = fileURLToPath(new URL("../dashboard/", import.meta.url));
/** URL prefix of the vendored browser modules. */
export const MODULES_PREFIX = "/dashboard/modules/";
/** The packages the page may load, and nothing else. */
export const BROWSER_PACKAGES = ["yjs", "y-websocket", "y-protocols", "lib0"] as const;
/** The page's own bare imports. */
export const PAGE_IMPORTS = ["yjs", "y-websocket", "y-protocols/awareness"] as const;
/** Package `exports` conditions a browser loading ES modules satisfies. */
const BROWSER_CONDITIONS = new Set(["browser", "module", "import", "default"]);
/** Most modules in the graph (lib0 has ~150): a bound on what the crawl reads. */
export const MAX_BROWSER_MODULES = 400;

/** The import map and the files it may load. */
export interface BrowserModules {
  /** `{"imports": {specifier: url}}` as the page embeds it. */
  readonly importMap: string;
  /** URL path → absolute file. */
  readonly files: ReadonlyMap<string, string>;
}

interface Pkg {
  readonly name: string;
  readonly version: string;
  readonly dir: string;
  readonly exports: unknown;
}

type Target = string | null;

function conditional(entry: unknown): Target {
  if (typeof entry === "string") return entry;
  if (Array.isArray(entry)) {
    for (const x of entry) {
      const t = conditional(x);
      if (t !== null) return t;
    }
    return null;
  }
  if (entry !== null && typeof entry === "object") {
    for (const [cond, v] of Object.entries(entry)) {
      if (!BROWSER_CONDITIONS.has(cond)) continue;
      const t = conditional(v);
      if (t !== null) return t;
    }
  }
  return null;
}

/** The file `subpath` (`.` or `./x`) of a package maps to under the browser conditions (no wildcards needed here). */
function exportsTarget(exp: unknown, subpath: string): Target {
  if (typeof exp === "string" || Array.isArray(exp)) return subpath === "." ? conditional(exp) : null;
  if (exp === null || typeof exp !== "object") return null;
  const keys = Object.keys(exp);
  if (keys.length > 0 && keys.every((k) => !k.startsWith("."))) return subpath === "." ? conditional(exp) : null;
  return conditional((exp as Record<string, unknown>)[subpath]);
}

const IMPORT_RE = /^\s*(?:import|export)\s+(?:[^;'"]*?\s+from\s+)?['"]([^'"\n]+)['"]/gm;

/** The static import specifiers of an ES module (statements at line start; JSDoc `import()` types are not imports). */
export function staticImports(source: string): string[] {
  return [...source.matchAll(IMPORT_RE)].map((m) => m[1]!);
}

/** Builds the import map and file table for {@link PAGE_IMPORTS} (throws if a module cannot be resolved: a packaging bug). */
export function browserModules(): BrowserModules {
  const require = createRequire(import.meta.url);
  const pkgs = new Map<string, Pkg>();
  const pkgOf = (name: string): Pkg => {
    let p = pkgs.get(name);
    if (p === undefined) {
      if (!(BROWSER_PACKAGES as readonly string[]).includes(name)) throw new Error(`the dashboard's browser modules import ${name}, which is not in BROWSER_PACKAGES`);
      const file = require.resolve(`${name}/package.json`);
      const json = JSON.parse(readFileSync(file, "utf8")) as { version: string; exports?: unknown };
      p = { name, version: json.version, dir: dirname(file), exports: json.exports ?? null };
      pkgs.set(name, p);
    }
    return p;
  };
  const ownerOf = (file: string): Pkg => {
    for (const p of pkgs.values()) if (file.startsWith(p.dir + sep)) return p;
    throw new Error(`${file} lies outside the browser packages`);
  };
  const urlOf = (file: string): string => {
    const p = ownerOf(file);
    return `${MODULES_PREFIX}${p.name}@${p.version}/${relative(p.dir, file).split(sep).join("/")}`;
  };
  const resolveBare = (spec: string): string => {
    const name = spec.split("/")[0]!;
    const p = pkgOf(name);
    const sub = spec === name ? "." : `.${spec.slice(name.length)}`;
    const t = exportsTarget(p.exports, sub);
    if (t === null) throw new Error(`cannot resolve ${spec} for the browser (no matching export in ${name})`);
    return resolve(p.dir, t);
  };

  const imports: Record<string, string> = {};
  const files = new Map<string, string>();
  const visit = (file: string) => {
    const url = urlOf(file);
    if (files.has(url)) return;
    if (files.size >= MAX_BROWSER_MODULES) throw new Error(`the dashboard's browser module graph exceeds ${MAX_BROWSER_MODULES} files`);
    files.set(url, file);
    for (const spec of staticImports(readFileSync(file, "utf8"))) {
      if (spec.startsWith("./") || spec.startsWith("../")) {
        const target = resolve(dirname(file), spec);
        ownerOf(target);
        visit(target);
      } else {
        const target = resolveBare(spec);
        imports[spec] = urlOf(target);
        visit(target);
      }
    }
  };
  for (const spec of PAGE_IMPORTS) {
    const target = resolveBare(spec);
    imports[spec] = urlOf(target);
    visit(target);
  }
  const sorted = Object.fromEntries(Object.entries(imports).sort(([a], [b]) => (a < b ? -1 : 1)));
  return { importMap: JSON.stringify({ imports: sorted }), files };
}

/** The page's own files, by URL path. */
export const PAGE_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  "/dashboard/app.js": { file: "app.js", type: "text/javascript; charset=utf-8" },
  "/dashboard/style.css": { file: "style.css", type: "text/css; charset=utf-8" },
  "/dashboard/favicon.svg": { file: "favicon.svg", type: "image/svg+xml" },
};

/** The page with its import map, and the Content-Security-Policy that admits exactly that inline script. */
export function dashboardPage(modules: BrowserModules): { html: string; csp: string } {
  const template = readFileSync(join(DASHBOARD_PAGE_DIR, "index.html"), "utf8");
  const script = modules.importMap;
  const hash = createHash("sha256").update(script, "utf8").digest("base64");
  const html = template.replace("<!--IMPORTMAP-->", `<script type="importmap">${script}</script>`);
  const csp = [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join("; ");
  return { html, csp };
}
