// The heddle dashboard page: syncs the peer's Yjs document over y-websocket (read-only) and draws it.
// Plain ES module, no build step: yjs and y-websocket come from the import map the daemon embeds.
import * as Y from "yjs";
import { WebsocketProvider } from "y-websocket";
import { Awareness } from "y-protocols/awareness";

const DOC_VERSION = 1;
const $ = (id) => document.getElementById(id);

// ---- token: from the URL fragment (never sent to the server), kept for this tab only ----
function takeToken() {
  const m = /(?:^#|&)token=([^&]+)/.exec(location.hash);
  if (m) {
    sessionStorage.setItem("heddle.token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("heddle.token");
}

// ---- formatting ----
const esc = (s) => String(s ?? "").replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
const short = (id) => (id && id.length > 12 ? `…${id.slice(-8)}` : (id ?? "–"));
const units = (s) => {
  if (s === null || s === undefined || s === "") return "–";
  try {
    return BigInt(s).toLocaleString("en-US");
  } catch {
    return esc(s);
  }
};
const pct = (x) => (x === null || x === undefined ? "–" : `${(x * 100).toFixed(1)} %`);
const ago = (ms) => {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  return `${Math.floor(s / 3600)} h`;
};
const weightNum = (w) => {
  if (w === null || w === undefined) return null;
  const [n, d] = String(w).split("/");
  return Number(n) / Number(d ?? "1");
};

// ---- state ----
const doc = new Y.Doc();
const sections = {
  meta: doc.getMap("meta"),
  node: doc.getMap("node"),
  edges: doc.getMap("edges"),
  groups: doc.getMap("groups"),
  bounds: doc.getMap("bounds"),
  peers: doc.getMap("peers"),
  rejected: doc.getMap("rejected"),
  raft: doc.getMap("raft"),
  claims: doc.getMap("claims"),
  events: doc.getArray("events"),
};
let clockOffset = 0; // daemon clock − local clock, ms
let lastUpdate = 0;
const serverNow = () => Date.now() + clockOffset;
const entities = (m) => [...m.entries()].map(([k, v]) => [k, v instanceof Y.Map ? v.toJSON() : v]);

// ---- drawing ----
function drawHeader() {
  const n = sections.node.toJSON();
  $("self").textContent = short(n.self);
  $("self").title = n.self ?? "";
  $("mode").textContent = n.mode ?? "…";
  $("mode").dataset.mode = n.mode ?? "";
  $("root").textContent = n.root ?? "…";
  $("minted").textContent = units(n.mintedTotal);
  $("spent").textContent = units(n.leafSpentTotal);
  $("open").textContent = n.reservationsOpen ?? "–";
  $("rejected-total").textContent = n.framesRejected ?? "–";
  document.body.dataset.failed = n.failed ? "true" : "false";
}

function drawTree() {
  const root = sections.node.get("root");
  const edges = entities(sections.edges).map(([id, e]) => ({ id, ...e }));
  const byParent = new Map();
  let retired = 0;
  for (const e of edges) {
    if (e.lifecycle === "RETIRED") {
      retired++;
      continue;
    }
    if (!byParent.has(e.parent)) byParent.set(e.parent, []);
    byParent.get(e.parent).push(e);
  }
  const bounds = Object.fromEntries(entities(sections.bounds));
  const out = [];
  const seen = new Set();
  const block = (parent, depth) => {
    if (seen.has(parent) || !byParent.has(parent)) return;
    seen.add(parent);
    const kids = byParent.get(parent).sort((a, b) => (a.child < b.child ? -1 : 1));
    const b = bounds[parent];
    const demandingKids = kids.filter((e) => e.demanding === true).length;
    out.push(`<div class="block" data-depth="${depth}" data-parent="${esc(parent)}">`);
    out.push(`<div class="block-head"><span class="group">${esc(parent)}</span><span class="muted">${kids.length} child${kids.length === 1 ? "" : "ren"}, <span data-field="demanding-count">${demandingKids}</span> demanding</span>${b ? `<span class="muted">deviation <b>${units(b.observed)}</b> of bound ${units(b.current)}</span>` : ""}</div>`);
    for (const e of kids) {
      // A demanding child is drawn and graded among the siblings demanding now (node.md §11's D, as the deviation
      // above measures); one without demand, or whose demand this peer cannot read, among all active siblings.
      const amongDemanding = e.demanding === true && e.fairShareDemanding !== null && e.fairShareDemanding !== undefined;
      const fair = amongDemanding ? e.fairShareDemanding : e.fairShare;
      const got = amongDemanding ? e.committedShareDemanding : e.committedShare;
      const basis = amongDemanding ? `of ${e.demandingSiblings} demanding` : "of all active";
      const basisTitle = amongDemanding
        ? `shares among the ${e.demandingSiblings} sibling${e.demandingSiblings === 1 ? "" : "s"} demanding now; among all active siblings: committed ${pct(e.committedShare)} · fair ${pct(e.fairShare)}`
        : "shares among all active siblings";
      // the daemon decides the tone (dashboard-snapshot.ts shareTone): a child without demand is drawn neutrally
      const tone = ["ok", "warn", "bad"].includes(e.tone) ? e.tone : "idle";
      const idle = e.demanding === false;
      out.push(`<div class="row" data-edge="${esc(e.id)}" data-tone="${tone}" data-demanding="${e.demanding === null || e.demanding === undefined ? "" : String(e.demanding)}" data-basis="${amongDemanding ? "demanding" : "active"}">
        <div class="name"><span class="group">${esc(e.child)}</span>${e.lifecycle !== "ACTIVE" ? `<span class="badge life">${esc(e.lifecycle)}</span>` : ""}${idle ? `<span class="badge" data-field="no-demand" title="no demand stands for it now: its share is not a fairness alarm">no demand</span>` : ""}</div>
        <div class="weight" title="weight"><span class="label">w</span> <span data-field="weight">${esc(e.weight)}</span></div>
        <div class="bar" title="committed ${pct(got)} · fair ${pct(fair)} ${basis}${idle ? " · no demand now" : ""}">
          <div class="fill" data-w="${got === null || got === undefined ? 0 : Math.min(100, got * 100)}"></div>
          ${fair === null || fair === undefined ? "" : `<div class="target" data-left="${Math.min(100, fair * 100)}"></div>`}
        </div>
        <div class="nums" title="${esc(basisTitle)}"><span class="label">fair</span> <span data-field="fair">${pct(fair)}</span> <span class="label">got</span> <span data-field="committed">${pct(got)}</span><div class="label basis" data-field="basis">${basis}</div></div>
        <div class="service" title="committed service (issued − returned) · spent"><span data-field="service">${units(e.committed)}</span> <span class="label">spent</span> <span data-field="spent">${units(e.spent)}</span></div>
      </div>`);
    }
    out.push(`</div>`);
    for (const e of kids) block(e.child, depth + 1);
  };
  block(root, 0);
  for (const p of [...byParent.keys()].sort()) block(p, 0); // detached subtrees, if any
  if (retired > 0) out.push(`<p class="muted">${retired} retired edge${retired === 1 ? "" : "s"} not shown</p>`);
  const omitted = sections.node.get("omitted");
  if (omitted) out.push(`<p class="muted">${omitted} entries left out (more than the dashboard shows)</p>`);
  $("tree").innerHTML = out.length > 0 ? out.join("") : `<p class="muted">no edges yet</p>`;
  geometry($("tree"));
}

// Sizes go through the CSSOM (the page's Content-Security-Policy admits no inline style attributes).
function geometry(el) {
  for (const x of el.querySelectorAll("[data-w]")) x.style.width = `${x.dataset.w}%`;
  for (const x of el.querySelectorAll("[data-left]")) x.style.left = `${x.dataset.left}%`;
  for (const x of el.querySelectorAll("[data-depth]")) x.style.setProperty("--depth", x.dataset.depth);
}

function drawBounds() {
  const rows = entities(sections.bounds).sort(([a], [b]) => (a < b ? -1 : 1));
  $("bounds").innerHTML =
    rows.length === 0
      ? `<p class="muted">no parents yet</p>`
      : `<table><thead><tr><th>parent</th><th></th><th class="r">observed</th><th class="r">current</th><th class="r">configured</th></tr></thead><tbody>${rows
          .map(([p, b]) => {
            // the track spans the larger of the current bound and the observed deviation; the line is the bound
            const obs = Number(b.observed);
            const cur = Number(b.current);
            const span = Math.max(obs, cur, 1) * 1.05;
            return `<tr data-bound="${esc(p)}" data-consistent="${b.consistent}">
              <td class="group">${esc(p)}</td>
              <td class="gauge" title="${b.consistent ? "within the bound" : "observed deviation above the current bound"}"><div class="gtrack"><div class="gobs" data-w="${(obs / span) * 100}"></div><div class="gcur" data-left="${(cur / span) * 100}"></div></div></td>
              <td class="r" data-field="observed">${units(b.observed)}</td><td class="r" data-field="current">${units(b.current)}</td><td class="r" data-field="configured">${units(b.configured)}</td></tr>`;
          })
          .join("")}</tbody></table>`;
  geometry($("bounds"));
}

function drawPeers() {
  const order = { self: 0, up: 1, "cut off": 2, lost: 3, "not connected": 4 };
  const rows = entities(sections.peers).sort(([a, x], [b, y]) => (order[x.state] ?? 9) - (order[y.state] ?? 9) || (a < b ? -1 : 1));
  $("peers").innerHTML = `<table><tbody>${rows
    .map(
      ([id, p]) => `<tr data-peer="${esc(id)}"><td class="mono" title="${esc(id)}">${esc(short(id))}</td>
        <td><span class="chip" data-state="${esc(p.state)}" data-field="state">${esc(p.state)}</span></td>
        <td class="muted">${p.lastEvent ? `${esc(p.lastEvent)}${p.reason ? ` (${esc(p.reason)})` : ""} <span class="age" data-at="${p.lastEventAt}"></span> ago` : ""}</td></tr>`,
    )
    .join("")}</tbody></table>`;
}

function drawRaft() {
  const r = sections.raft.toJSON();
  if (sections.node.get("mode") !== "governed" || Object.keys(r).length === 0) {
    $("raft").innerHTML = `<p class="muted">static mode: supply and tree are fixed by the genesis; there is no control plane to show.</p>`;
    return;
  }
  const self = sections.node.get("self");
  const lag = r.commitIndex !== undefined && r.appliedIndex !== undefined ? r.commitIndex - r.appliedIndex : null;
  const voters = r.voters ? r.voters.split(",").filter(Boolean).length : 0;
  const learners = r.learners ? r.learners.split(",").filter(Boolean).length : 0;
  $("raft").innerHTML = `<dl class="kv">
    <dt>role</dt><dd><span class="chip" data-role="${esc(r.role)}" data-field="role">${esc(r.role)}</span></dd>
    <dt>leader</dt><dd class="mono" data-field="leader" title="${esc(r.leader)}">${r.leader === null ? "none" : esc(short(r.leader))}${r.leader === self ? " (this peer)" : ""}</dd>
    <dt>term</dt><dd data-field="term">${esc(r.term)}</dd>
    <dt>commit index</dt><dd data-field="commitIndex">${esc(r.commitIndex)}</dd>
    <dt>applied index</dt><dd data-field="appliedIndex">${esc(r.appliedIndex ?? "–")}${lag !== null && lag > 0 ? ` <span class="muted">(${lag} behind)</span>` : ""}</dd>
    <dt>members</dt><dd>${voters} voter${voters === 1 ? "" : "s"}, ${learners} learner${learners === 1 ? "" : "s"}; ${esc(r.enrolled ?? "–")} enrolled</dd>
    <dt>writable</dt><dd>${r.writable ? "yes" : "not yet (enrolling)"}</dd></dl>`;
}

function drawClaims() {
  const rows = entities(sections.claims).map(([, c]) => c).sort((a, b) => (a.key < b.key ? -1 : 1));
  if (sections.node.get("mode") !== "governed") {
    $("claims").innerHTML = `<p class="muted">claims need a governed cluster.</p>`;
    return;
  }
  $("claims").innerHTML =
    rows.length === 0
      ? `<p class="muted">no claims held</p>`
      : `<table><thead><tr><th>key</th><th>holder</th><th class="r">token</th><th class="r">lease left</th></tr></thead><tbody>${rows
          .map(
            (c) => `<tr data-claim="${esc(c.key)}"><td class="mono">${esc(c.key)}</td><td>${esc(c.holder)}${c.mode === "shared" ? ` <span class="badge">shared</span>` : ""}</td>
              <td class="r" data-field="token">${esc(c.token)}</td><td class="r lease" data-expires="${c.expiresAt ?? ""}">${c.expiresAt === null ? "no lease" : ""}</td></tr>`,
          )
          .join("")}</tbody></table>`;
  tickClocks();
}

function drawEvents() {
  const rejected = entities(sections.rejected).filter(([, n]) => n > 0);
  $("rejected").innerHTML =
    rejected.length === 0 ? `<p class="muted">no frames rejected</p>` : `<p>${rejected.map(([r, n]) => `<span class="chip" data-reason="${esc(r)}">${esc(r)} ${n}</span>`).join(" ")}</p>`;
  const evs = sections.events.toArray().slice().reverse();
  $("events").innerHTML =
    evs.length === 0 ? `<li class="muted">nothing yet</li>` : evs.map((e) => `<li data-kind="${esc(e.kind)}"><span class="age" data-at="${e.at}"></span><span class="kind">${esc(e.kind)}</span> ${esc(e.text)}</li>`).join("");
  tickClocks();
}

function tickClocks() {
  const now = serverNow();
  for (const el of document.querySelectorAll(".age[data-at]")) {
    const at = Number(el.dataset.at);
    if (at > 0) el.textContent = ago(now - at);
  }
  for (const el of document.querySelectorAll(".lease[data-expires]")) {
    const at = Number(el.dataset.expires);
    if (el.dataset.expires !== "") el.textContent = at > now ? ago(at - now) : "lapsed";
  }
  const st = $("status");
  if (st.dataset.state === "live") $("status-text").textContent = `live · updated ${ago(Date.now() - lastUpdate)} ago`;
}

const draws = { node: [drawHeader, drawTree, drawRaft, drawClaims], edges: [drawTree], groups: [], bounds: [drawBounds, drawTree], peers: [drawPeers], rejected: [drawEvents], raft: [drawRaft], claims: [drawClaims], events: [drawEvents] };
const pending = new Set();
let frame = 0;
function schedule(name) {
  for (const f of draws[name] ?? []) pending.add(f);
  if (frame === 0) {
    frame = requestAnimationFrame(() => {
      frame = 0;
      const fs = [...pending];
      pending.clear();
      for (const f of fs) f();
    });
  }
}
for (const [name, s] of Object.entries(sections)) {
  if (name === "meta") continue;
  if (s instanceof Y.Array) s.observe(() => schedule(name));
  else s.observeDeep(() => schedule(name));
}
sections.node.observe((e) => {
  if (e.keysChanged.has("clock")) clockOffset = sections.node.get("clock") - Date.now();
});
doc.on("update", () => {
  lastUpdate = Date.now();
});

// ---- connection ----
function setStatus(state, text) {
  $("status").dataset.state = state;
  $("status-text").textContent = text;
}

function connect(token) {
  const awareness = new Awareness(doc);
  awareness.setLocalState(null); // read-only viewer: announce nothing
  const base = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/dashboard`;
  const provider = new WebsocketProvider(base, "ws", doc, { awareness, disableBc: true, protocols: ["heddle.dashboard.v1", `bearer.${token}`] });
  let everConnected = false;
  let failures = 0;
  provider.on("status", ({ status }) => {
    if (status === "connected") {
      everConnected = true;
      failures = 0;
      setStatus("syncing", "syncing…");
    } else if (status === "disconnected") {
      failures++;
      if (!everConnected && failures >= 3) {
        setStatus("refused", "cannot connect: is the token right, and the peer up?");
        $("login").hidden = false;
        $("login-error").textContent = "The peer refused the connection or is not reachable. Check the token.";
      } else setStatus("connecting", "reconnecting…");
    }
  });
  provider.on("sync", (synced) => {
    if (!synced) return;
    if (sections.meta.get("version") !== DOC_VERSION) {
      setStatus("refused", `this page does not know document version ${sections.meta.get("version")}; reload`);
      provider.destroy();
      return;
    }
    const clock = sections.node.get("clock");
    if (typeof clock === "number") clockOffset = clock - Date.now();
    lastUpdate = Date.now();
    $("login").hidden = true;
    setStatus("live", "live");
    document.body.dataset.synced = "true";
    for (const name of Object.keys(draws)) schedule(name);
  });
  return provider;
}

let provider = null;
const token = takeToken();
$("login-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const t = $("token").value.trim();
  if (t === "") return;
  sessionStorage.setItem("heddle.token", t);
  provider?.destroy();
  $("login-error").textContent = "";
  provider = connect(t);
});
if (token === null) {
  $("login").hidden = false;
  setStatus("refused", "token needed");
} else provider = connect(token);
setInterval(tickClocks, 1000);
