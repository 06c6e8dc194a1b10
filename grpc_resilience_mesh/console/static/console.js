// The mesh console: polls /api/state about once a second and draws the graph, the edge
// table and the selected edge's panel; controls POST to /api/*. No framework, no network
// beyond this server. Data goes into the page as text nodes only, never as HTML.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const POS = {
  client: [60, 300], gateway: [220, 300], recommendation: [580, 80], profile: [1060, 300],
  payment: [580, 540], redis: [1060, 540], notification: [780, 650], smtp: [1120, 650],
};
// Where each edge's label box sits (its top-left corner), clear of the nodes.
const LABELS = {
  gateway_to_recommendation: [150, 110], recommendation_to_profile: [820, 120],
  gateway_to_profile: [480, 320], gateway_to_payment: [150, 440], payment_to_redis: [700, 555],
  notification_to_redis: [930, 590], notification_to_smtp: [880, 665],
};
const PEERS = new Set(["client", "redis", "smtp"]);
// Where each replica's box sits (its centre), beside its service's node.
const REPLICA_POS = {
  recommendation: [390, 22], "recommendation-2": [390, 76],
  profile: [1060, 362], "profile-2": [1060, 412],
};
const TOXIC_ATTRS = {
  latency: {latency: 300, jitter: 0}, timeout: {timeout: 0}, reset_peer: {timeout: 0},
  bandwidth: {rate: 10}, slow_close: {delay: 1000}, limit_data: {bytes: 1000},
  slicer: {average_size: 100, size_variation: 10, delay: 10},
};
const METHODS = {
  profile: ["GetProfile"], recommendation: ["Recommend", "Popular"],
  payment: ["Charge", "GetCharge"], gateway: ["GetHome", "Checkout", "GetCharge"],
};
let state = null;
let selected = null;
let traceFilter = "all";

function el(tag, attrs, ...children) {
  const node = tag.startsWith("svg:") ? document.createElementNS(SVGNS, tag.slice(4))
    : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else if (v !== null && v !== undefined) node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    node.append(typeof c === "string" || typeof c === "number" ? String(c) : c);
  }
  return node;
}

const fmt = (v, digits = 1) => (v === null || v === undefined ? "–" : Number(v).toFixed(digits));
const ms = (v) => (v === null || v === undefined ? "–" : `${fmt(v, v < 10 ? 1 : 0)} ms`);
const pct = (v) => `${fmt(100 * v, 0)}%`;
const shortMethod = (m) => (m === "*" ? "*" : m.split("/").pop());

// The console's per-run token: taken from the URL `mesh up` printed (?token=...), kept in
// this tab's sessionStorage and dropped from the address bar; every API call sends it.
const TOKEN = (() => {
  const params = new URLSearchParams(location.search);
  const given = params.get("token");
  if (given) {
    sessionStorage.setItem("mesh-console-token", given);
    params.delete("token");
    const rest = params.toString();
    history.replaceState(null, "", location.pathname + (rest ? `?${rest}` : "") + location.hash);
  }
  return sessionStorage.getItem("mesh-console-token") || "";
})();

async function api(path, body) {
  const headers = {Authorization: `Bearer ${TOKEN}`};
  const init = body === undefined ? {headers} : {
    method: "POST",
    headers: {...headers, "Content-Type": "application/json", "X-Mesh-Console": "1"},
    body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function showError(text) {
  const box = document.getElementById("errors");
  box.replaceChildren(text ? el("p", {}, text) : "");
}

async function act(path, body) {
  try {
    await api(path, body);
    showError("");
    await poll(true);
  } catch (err) {
    showError(`${path}: ${err.message}`);
  }
}

function worstBreaker(stats) {
  const states = stats.breakers.map((b) => b.state);
  return states.includes("open") ? "open" : states.includes("half-open") ? "half-open" : "closed";
}

function edgeClass(edge) {
  const s = edge.stats;
  const breaker = worstBreaker(s);
  const faulted = edge.toxics.length || edge.app_faults.length || (edge.xds_faults || []).length;
  let cls = "edge";
  if (breaker === "open" || s.error_rate >= 0.5) cls += " bad";
  else if (breaker === "half-open" || s.error_rate > 0 || faulted) cls += " warn";
  if (edge.proxy && !edge.proxy.enabled) cls += " down";
  if (edge.name === selected) cls += " selected";
  return cls;
}

function breakerText(b) {
  if (b.state === "open") return `${shortMethod(b.method)} open, probe in ${fmt(b.probe_in_s)} s`;
  return `${shortMethod(b.method)} ${b.state}`;
}

function drawGraph() {
  const svg = document.getElementById("graph");
  const nodes = new Set(["client", ...state.edges.flatMap((e) => [e.caller, e.dependency])]);
  const items = [];
  const links = [{name: "client_to_gateway", caller: "client", dependency: "gateway"}, ...state.edges];
  for (const edge of links) {
    const [x1, y1] = POS[edge.caller] || [0, 0];
    const [x2, y2] = POS[edge.dependency] || [0, 0];
    const mx = (x1 + x2) / 2, my = (y1 + y2) / 2;
    if (!edge.stats) {
      items.push(el("svg:g", {class: "edge"}, el("svg:line", {x1, y1, x2, y2})));
      continue;
    }
    const s = edge.stats;
    const breaker = worstBreaker(s);
    const lines = [
      [`${fmt(s.calls_per_s)}/s  err ${pct(s.error_rate)}  p50 ${ms(s.p50_ms)}  p99 ${ms(s.p99_ms)}`, ""],
      [`retries ${fmt(s.retries_per_s)}/s  fallbacks ${fmt(s.fallbacks_per_s)}/s${s.throttled_per_s ? `  throttled ${fmt(s.throttled_per_s)}/s` : ""}`, ""],
    ];
    if (s.bulkhead_limit !== null || s.budget_max_tokens !== null) {
      lines.push([`bulkhead ${fmt(s.bulkhead_in_use, 0)}/${fmt(s.bulkhead_limit, 0)}  budget ${fmt(s.budget_tokens)}/${fmt(s.budget_max_tokens, 0)}`, ""]);
    }
    for (const b of s.breakers) lines.push([`breaker ${breakerText(b)}`, b.state]);
    for (const t of edge.toxics) lines.push([`toxic ${t.type} ${JSON.stringify(t.attributes)}${onProxies(edge, t)} (${t.owner})`, "fault"]);
    for (const f of edge.app_faults) lines.push([`fault ${shortMethod(f.method)} ${f.code} ${pct(f.error_rate)} (${f.owner})`, "fault"]);
    for (const f of edge.xds_faults || []) lines.push([`xDS ${xdsText(f)} (${f.owner})`, "fault"]);
    if (edge.proxy && !edge.proxy.enabled) lines.push(["proxy disabled", "open"]);
    const hasMetrics = s.calls_per_s > 0 || s.breakers.length || edge.toxics.length || edge.app_faults.length || (edge.xds_faults || []).length;
    const label = hasMetrics || edge.name === selected ? lines : lines.slice(0, 1);
    const h = 14 * label.length + 6, w = 300;
    const [lx, ly] = LABELS[edge.name] || [Math.min(Math.max(mx - w / 2, 2), 1200 - w - 2), my + 10];
    items.push(el("svg:g", {
      class: edgeClass(edge), "data-edge": edge.name, "data-breaker": breaker,
      "data-p50": s.p50_ms === null ? "" : s.p50_ms, "data-p99": s.p99_ms === null ? "" : s.p99_ms,
      onclick: () => select(edge.name),
    },
    el("svg:line", {x1, y1, x2, y2}),
    el("svg:rect", {class: "proxy", x: mx - 5, y: my - 5, width: 10, height: 10, transform: `rotate(45 ${mx} ${my})`},
      el("svg:title", {}, edge.proxy ? `proxy ${edge.name} (${edge.proxy.listen})` : "direct")),
    el("svg:g", {class: "label"},
      el("svg:rect", {x: lx, y: ly, width: w, height: h, rx: 3}),
      label.map(([text, cls], i) => el("svg:text", {x: lx + 4, y: ly + 14 + 14 * i, class: cls}, text)))));
  }
  const servers = new Map((state.servers || []).map((s) => [s.name, s]));
  for (const name of nodes) {
    const [x, y] = POS[name] || [0, 0];
    items.push(el("svg:g", {class: `node${PEERS.has(name) ? " peer" : ""}`, "data-node": name},
      el("svg:rect", {x: x - 55, y: y - 16, width: 110, height: 32, rx: 6}),
      el("svg:text", {x, y}, name),
      ...admissionText(servers.get(name), x, y + 30)));
  }
  items.push(...(state.replicas || []).map(replicaNode));
  svg.replaceChildren(...items);
  fitBoxes(svg);
}

// Each label box as wide as its longest line and inside the drawing: a fixed width cut the
// longer lines short, and a box placed near the right edge ran past it (notification_to_redis).
function fitBoxes(svg) {
  const right = svg.viewBox.baseVal.width - 2;
  for (const box of svg.querySelectorAll(".edge .label, .replica")) {
    const rect = box.querySelector("rect");
    const texts = [...box.querySelectorAll("text")];
    const longest = Math.max(0, ...texts.map((t) => t.getComputedTextLength()));
    if (!longest) continue;  // not laid out (another tab is showing): measured on the next draw
    const w = Math.ceil(longest) + 10;
    const x = Math.max(2, Math.min(Number(rect.getAttribute("x")), right - w));
    rect.setAttribute("x", x);
    rect.setAttribute("width", w);
    for (const t of texts) t.setAttribute("x", x + 4);
  }
}

function edgeProxyCount(edgeName) {
  const count = (state.replicas || []).flatMap((r) => r.proxies).filter((p) => p.edge === edgeName).length;
  return Math.max(count, 1);
}

function onProxies(edge, toxic) {
  // A toxic on some of the edge's replica proxies only says which: the edge's figures are
  // every replica's together, and ejection may have moved the calls away from the slow one.
  // On every replica's (what adding it to the edge does) it needs no note.
  const count = edgeProxyCount(edge.name);
  if (count <= 1 || !toxic.proxies || toxic.proxies.length >= count) return "";
  return ` on ${toxic.proxies.join(", ")} only`;
}

function ejectionText(replica) {
  const callers = Object.keys(replica.ejection || {});
  if (!callers.length) return ["ejection off", ""];
  const out = callers.filter((c) => replica.ejection[c] === "ejected").sort();
  return out.length ? [`ejected by ${out.join(", ")}`, "open"] : ["in rotation", ""];
}

function replicaFaults(replica) {
  return replica.proxies.filter((p) => p.toxics.length || !p.enabled).map((p) =>
    [`from ${p.caller}: ${[...p.toxics, ...(p.enabled ? [] : ["proxy disabled"])].join(", ")}`, "fault"]);
}

function replicaNode(replica) {
  // Each replica with the calls it served, its ejection and the faults in front of it.
  const [x, y] = REPLICA_POS[replica.name] || [0, 0];
  const [ejection, ejCls] = ejectionText(replica);
  const lines = [
    [`${replica.name}  ${fmt(replica.calls_per_s)}/s  err ${pct(replica.error_rate)}`, ""],
    [ejection, ejCls], ...replicaFaults(replica),
  ];
  const w = 240, h = 12 * lines.length + 6;
  const out = Object.entries(replica.ejection || {}).filter(([, v]) => v === "ejected").map(([c]) => c).sort();
  return el("svg:g", {class: `replica${out.length ? " ejected" : ""}`, "data-replica": replica.name,
    "data-ejected-by": out.join(","), "data-calls": replica.calls_per_s},
  el("svg:rect", {x: x - w / 2, y: y - 10, width: w, height: h, rx: 4}),
  lines.map(([text, cls], i) => el("svg:text", {x: x - w / 2 + 4, y: y + 2 + 12 * i, class: cls}, text)));
}

function drawReplicas() {
  const rows = (state.replicas || []).map((r) => el("tr", {"data-replica-row": r.name},
    el("td", {}, r.name), el("td", {}, fmt(r.calls_per_s)), el("td", {}, pct(r.error_rate)),
    el("td", {}, ejectionText(r)[0]),
    el("td", {}, replicaFaults(r).map(([text]) => text).join("; ") || "–")));
  document.querySelector("#replicas tbody").replaceChildren(...rows);
}

function admissionText(server, x, y) {
  // A service's calls in flight against its concurrency limit, and its refusals per second.
  if (!server || server.concurrency_limit === null) return [];
  const limit = server.concurrency_limit === 0 ? "no limit" : `limit ${fmt(server.concurrency_limit, 0)}`;
  const text = `${fmt(server.in_flight, 0)} in flight, ${limit}, shed ${fmt(server.shed_per_s)}/s`;
  return [el("svg:text", {x, y, class: "admission", "data-admission": server.name}, text)];
}

function drawTable() {
  const rows = state.edges.map((e) => {
    const s = e.stats;
    const faults = [...e.toxics.map((t) => `${t.type}${onProxies(e, t)} (${t.owner})`),
      ...e.app_faults.map((f) => `${shortMethod(f.method)} ${f.code} (${f.owner})`),
      ...(e.xds_faults || []).map((f) => `xDS ${xdsText(f)} (${f.owner})`)];
    return el("tr", {class: "clickable", "data-row": e.name, onclick: () => select(e.name)},
      el("td", {}, e.name), el("td", {}, fmt(s.calls_per_s)), el("td", {}, pct(s.error_rate)),
      el("td", {}, ms(s.p50_ms)), el("td", {}, ms(s.p99_ms)), el("td", {}, fmt(s.retries_per_s)),
      el("td", {}, fmt(s.fallbacks_per_s)), el("td", {}, fmt(s.throttled_per_s)),
      el("td", {}, s.breakers.map((b) => el("div", {class: `state-${b.state}`}, breakerText(b)))),
      el("td", {}, s.bulkhead_limit === null ? "–" : `${fmt(s.bulkhead_in_use, 0)}/${fmt(s.bulkhead_limit, 0)}`),
      el("td", {}, s.budget_max_tokens === null ? "–" : `${fmt(s.budget_tokens)}/${fmt(s.budget_max_tokens, 0)}`),
      el("td", {}, faults.join(", ") || "–"));
  });
  document.querySelector("#edges tbody").replaceChildren(...rows);
}

function select(name) {
  selected = name;
  draw();
}

function edgePanel() {
  const card = document.getElementById("edge");
  const edge = state.edges.find((e) => e.name === selected);
  if (!edge) return;
  if (card.dataset.edge === edge.name && card.contains(document.activeElement)) {
    updateEdgeLists(edge);
    return;  // keep a half-filled form as it is
  }
  card.dataset.edge = edge.name;
  const typeSel = el("select", {id: "toxic-type"}, Object.keys(TOXIC_ATTRS).map((t) => el("option", {value: t}, t)));
  const attrs = el("input", {id: "toxic-attrs", value: JSON.stringify(TOXIC_ATTRS.latency), style: "width: 14em"});
  typeSel.addEventListener("change", () => { attrs.value = JSON.stringify(TOXIC_ATTRS[typeSel.value]); });
  const stream = el("select", {id: "toxic-stream"}, el("option", {}, "downstream"), el("option", {}, "upstream"));
  const method = el("select", {id: "fault-method"}, (METHODS[edge.dependency] || ["*"]).map((m) => el("option", {}, m)), el("option", {}, "*"));
  const rate = el("input", {id: "fault-rate", type: "number", min: 0, max: 1, step: 0.1, value: 1});
  const code = el("select", {id: "fault-code"}, ["UNAVAILABLE", "INTERNAL", "RESOURCE_EXHAUSTED", "DEADLINE_EXCEEDED"].map((c) => el("option", {}, c)));
  const delay = el("input", {id: "fault-delay", type: "number", min: 0, step: 0.1, value: 0});
  card.replaceChildren(
    el("h2", {}, edge.name),
    el("div", {class: "dim"}, edge.proxy ? `through proxy ${edge.proxy.listen}${edge.proxy.enabled ? "" : " (disabled)"}` : "no proxy"),
    el("h3", {}, "breakers, bulkhead, budget"), el("ul", {class: "plain", id: "edge-breakers"}),
    el("h3", {}, "faults"), el("ul", {class: "plain", id: "edge-faults"}),
    edge.proxy ? el("div", {},
      el("h3", {}, "add a toxic"), typeSel, stream, attrs,
      el("div", {class: "buttons"},
        el("button", {id: "toxic-add", onclick: () => {
          let parsed;
          try { parsed = JSON.parse(attrs.value || "{}"); } catch (err) { showError(`attributes: ${err.message}`); return; }
          act("/api/toxics", {edge: edge.name, type: typeSel.value, stream: stream.value, attributes: parsed});
        }}, "add toxic"),
        el("button", {id: "proxy-toggle", onclick: () => act("/api/proxy", {edge: edge.name, enabled: !edge.proxy.enabled})},
          edge.proxy.enabled ? "disable proxy" : "enable proxy"))) : "",
    METHODS[edge.dependency] ? el("div", {},
      el("h3", {}, `add an app fault on ${edge.dependency}`),
      el("label", {}, "method ", method), el("label", {}, "rate ", rate), el("label", {}, "code ", code),
      el("label", {}, "delay s ", delay),
      el("div", {class: "buttons"}, el("button", {id: "fault-add", onclick: () => act("/api/faults", {
        service: edge.dependency, method: method.value, error_rate: Number(rate.value), code: code.value,
        delay_s: Number(delay.value), pushback_ms: -1,
      })}, "add app fault"))) : "");
  updateEdgeLists(edge);
}

function updateEdgeLists(edge) {
  const s = edge.stats;
  const info = [
    ...s.breakers.map((b) => el("li", {class: `state-${b.state}`, "data-breaker-method": shortMethod(b.method)}, `breaker ${breakerText(b)}`)),
    s.bulkhead_limit === null ? null : el("li", {}, `bulkhead ${fmt(s.bulkhead_in_use, 0)} in use of ${fmt(s.bulkhead_limit, 0)}`),
    s.budget_max_tokens === null ? null : el("li", {}, `retry budget ${fmt(s.budget_tokens)} of ${fmt(s.budget_max_tokens, 0)} tokens`),
    el("li", {}, `retries ${fmt(s.retries_per_s)}/s, fallbacks ${fmt(s.fallbacks_per_s)}/s, breaker rejections ${fmt(s.breaker_rejections_per_s)}/s, throttled ${fmt(s.throttled_per_s)}/s`),
    Object.keys(s.fates_per_s || {}).length ? el("li", {"data-fates": edge.caller},
      `fates at ${edge.caller}: ${Object.entries(s.fates_per_s).map(([f, r]) => `${f} ${fmt(r)}/s`).join(", ")}`) : null,
  ];
  document.getElementById("edge-breakers").replaceChildren(...info.filter(Boolean));
  const faults = [
    ...edge.toxics.map((t) => el("li", {"data-toxic": t.name, "data-owner": t.owner},
      `toxic ${t.name}: ${t.type} ${t.stream} ${JSON.stringify(t.attributes)}${onProxies(edge, t)} `, el("span", {class: "owner"}, `set by ${t.owner} `),
      el("button", {onclick: () => act("/api/toxics/delete", {edge: edge.name, name: t.name})}, "remove"))),
    ...edge.app_faults.map((f) => el("li", {"data-fault": shortMethod(f.method), "data-owner": f.owner},
      `app fault ${shortMethod(f.method)}: ${f.code} ${pct(f.error_rate)}${f.delay_s ? `, delay ${f.delay_s} s` : ""} `,
      el("span", {class: "owner"}, `set by ${f.owner} `),
      el("button", {onclick: () => act("/api/faults/delete", {service: f.service, method: f.method})}, "remove"))),
    ...(edge.xds_faults || []).map((f) => el("li", {"data-xds-fault": f.method, "data-owner": f.owner},
      `xDS (A33) fault ${xdsText(f)} `, el("span", {class: "owner"}, `set by ${f.owner} (mesh fault rm --xds ${edge.name})`))),
  ];
  document.getElementById("edge-faults").replaceChildren(...(faults.length ? faults : [el("li", {class: "dim"}, "none")]));
}

function xdsText(f) {
  const parts = [];
  if (f.abort_percent) parts.push(`${f.abort_code} ${f.abort_percent}%`);
  if (f.delay_percent) parts.push(`delay ${f.delay_s * 1000} ms ${f.delay_percent}%`);
  return `${f.method} ${parts.join(", ")}`;
}

function drawCsds() {
  const card = document.getElementById("csds");
  if (!state.csds) {
    card.replaceChildren();
    card.classList.add("hidden");
    return;
  }
  card.classList.remove("hidden");
  const rows = Object.entries(state.csds).map(([client, d]) => el("li", {"data-csds": client}, d.error
    ? `${client}: ${d.error}`
    : `${client}: ACKED version ${d.versions.join(", ") || "none"}: ` +
      Object.entries(d.resources).map(([kind, names]) => `${kind} ${names.join(", ")}`).join("; ") +
      d.not_acked.map((b) => `; ${b.kind} ${b.name} ${b.status}${b.error ? ` (${b.error})` : ""}`).join("")));
  card.replaceChildren(el("h2", {}, "xDS clients (CSDS)"), el("ul", {}, ...rows));
}

function drawExperiment() {
  const card = document.getElementById("experiment");
  const exp = state.experiment;
  if (!exp) {
    card.replaceChildren(el("h2", {}, "experiment"), el("p", {class: "dim"}, "none running (mesh chaos run NAME --target running)"));
    return;
  }
  const codes = Object.entries(exp.codes || {}).map(([k, v]) => `${k} ${v}`).join(", ");
  card.replaceChildren(el("h2", {}, `experiment ${exp.experiment || ""}`),
    el("div", {"data-experiment": exp.experiment || ""}, `variant ${exp.variant || "–"}, phase ${exp.phase || "–"}`),
    el("progress", {max: exp.total || 1, value: exp.done || 0}),
    el("div", {}, `${exp.done || 0} of ${exp.total || "?"} requests; ${codes}`));
}

function drawLoad() {
  const load = state.load || {running: false};
  const box = document.getElementById("load-status");
  box.textContent = load.running
    ? `running at ${load.rate_per_s}/s (home ${load.home} : checkout ${load.checkout}); ` +
      Object.entries(load.codes).map(([k, v]) => `${k} ${v}`).join(", ")
    : "stopped";
}

function draw() {
  if (!state) return;
  document.getElementById("policy").textContent = `policy ${state.policy} · gateway ${state.gateway}`;
  document.getElementById("updated").textContent = `updated ${new Date(state.at * 1000).toLocaleTimeString()}`;
  // mesh status averages over its own --window (1 s by default): say which window these are.
  document.getElementById("window").textContent = `rates over the last ${fmt(state.rate_window_s, 0)} s (as mesh status --window ${fmt(state.rate_window_s, 0)})`;
  if (state.errors.length) showError(state.errors.join("; "));
  drawGraph();
  drawTable();
  drawReplicas();
  drawExperiment();
  drawCsds();
  drawLoad();
  edgePanel();
}

let polling = null;
async function poll(now) {
  clearTimeout(polling);
  try {
    if (now || !document.hidden) {
      state = await api("/api/state");
      draw();
    }
  } catch (err) {
    showError(`console: ${err.message}`);
  }
  polling = setTimeout(() => poll(false), 1000);
}

// Traces --------------------------------------------------------------------------------

async function loadTraces() {
  try {
    const data = await api(`/api/traces?filter=${traceFilter}&limit=60`);
    const source = document.getElementById("trace-source");
    source.dataset.source = data.source || "";
    source.textContent = `traces from ${data.source_label || "?"}${data.error ? `: ${data.error}` : ""}`;
    const rows = data.traces.map((t) => el("tr", {class: "clickable", "data-trace": t.trace_id, onclick: () => openTrace(t.trace_id)},
      el("td", {}, new Date(t.start_ns / 1e6).toLocaleTimeString()), el("td", {}, t.operation),
      el("td", {}, fmt(t.duration_ms)), el("td", {}, `${t.status}${t.degraded ? " degraded" : ""}`), el("td", {}, t.spans)));
    document.querySelector("#traces tbody").replaceChildren(...(rows.length ? rows : [el("tr", {}, el("td", {colspan: 5, class: "dim"}, "no traces"))]));
  } catch (err) {
    showError(`traces: ${err.message}`);
  }
}

function attrText(attrs) {
  return Object.entries(attrs || {}).filter(([k]) => k.startsWith("mesh.")).map(([k, v]) => `${k.slice(5)}=${v}`).join(" ");
}

async function openTrace(id) {
  const box = document.getElementById("waterfall");
  try {
    const data = await api(`/api/traces/${encodeURIComponent(id)}`);
    const total = Math.max(...data.rows.map((r) => r.start_ms + (r.duration_ms || 0)), 0.001);
    const rows = data.rows.map((r) => {
      const left = `${(100 * r.start_ms) / total}%`;
      const indent = `${r.depth * 12}px`;
      if (r.kind === "event") {
        return el("div", {class: "wf-row wf-event", "data-event": r.name},
          el("div", {class: "wf-name", style: `padding-left: ${indent}`, title: attrText(r.attributes)}, `· ${r.name} ${attrText(r.attributes)}`),
          el("div", {class: "wf-track"}, el("div", {class: "wf-dot", style: `left: ${left}`})),
          el("div", {class: "wf-time"}, `${fmt(r.start_ms)} ms`));
      }
      return el("div", {class: "wf-row", "data-span": r.name},
        el("div", {class: "wf-name", style: `padding-left: ${indent}`}, `${r.name} [${r.service}] ${r.status}`),
        el("div", {class: "wf-track"}, el("div", {class: `wf-bar${r.status === "OK" ? "" : " err"}`,
          style: `left: ${left}; width: ${Math.max(0.3, (100 * r.duration_ms) / total)}%`})),
        el("div", {class: "wf-time"}, `${fmt(r.start_ms)} +${fmt(r.duration_ms)} ms`));
    });
    box.replaceChildren(el("h2", {"data-open-trace": data.trace_id}, `trace ${data.trace_id}`),
      data.jaeger ? el("a", {href: data.jaeger, target: "_blank", rel: "noopener"}, "open in Jaeger") : "",
      ...rows);
    location.hash = `trace=${data.trace_id}`;
  } catch (err) {
    box.replaceChildren(el("p", {class: "errors"}, `trace ${id}: ${err.message}`));
  }
}

// Reports ------------------------------------------------------------------------------

async function loadReports() {
  try {
    const data = await api("/api/reports");
    const pick = document.getElementById("report-pick");
    const current = pick.value;
    pick.replaceChildren(...data.reports.map((r) => el("option", {value: r.name}, `${r.name}${r.held === false ? " (did not hold)" : ""}`)));
    if (!data.reports.length) {
      document.getElementById("report-panels").replaceChildren(el("p", {class: "dim"}, "no reports (mesh chaos run writes them to reports/)"));
      return;
    }
    if (current && data.reports.some((r) => r.name === current)) pick.value = current;
    await openReport(pick.value);
  } catch (err) {
    showError(`reports: ${err.message}`);
  }
}

async function openReport(name) {
  const data = await api(`/api/reports/${encodeURIComponent(name)}`);
  const panels = data.panels.filter((p) => p.points.length).map((p) => {
    const maxT = Math.max(...p.points.map((q) => q[0]), 0.001);
    const maxMs = Math.max(...p.points.map((q) => q[1]), 1);
    const W = 1000, H = 170, L = 50, B = 20;
    const dots = p.points.map(([t, latency, code, degraded, trace]) => el("svg:circle", {
      cx: L + ((W - L - 10) * t) / maxT, cy: H - B - ((H - B - 8) * latency) / maxMs, r: 3,
      class: code !== "OK" ? "failed" : degraded ? "degraded" : "",
      "data-trace": trace || null, "data-code": code,
      onclick: trace ? () => { showTab("traces"); openTrace(trace); } : null,
    }, el("svg:title", {}, `${fmt(latency)} ms ${code}${degraded ? " degraded" : ""} at ${fmt(t, 2)} s${trace ? ` trace ${trace}` : ""}`)));
    return el("div", {class: "panel", "data-panel": `${p.variant}/${p.phase}`},
      el("h3", {}, `${p.variant} / ${p.phase} (${p.points.length} requests)`),
      el("svg:svg", {viewBox: `0 0 ${W} ${H}`},
        el("svg:line", {x1: L, y1: H - B, x2: W, y2: H - B, stroke: "#999"}),
        el("svg:line", {x1: L, y1: 0, x2: L, y2: H - B, stroke: "#999"}),
        el("svg:text", {x: 2, y: 12, class: "axis"}, `${fmt(maxMs, 0)} ms`),
        el("svg:text", {x: W - 60, y: H - 4, class: "axis"}, `${fmt(maxT, 1)} s`),
        dots));
  });
  document.getElementById("report-panels").replaceChildren(el("h2", {}, `${data.name}: ${data.title}`), ...panels);
}

function showTab(name) {
  for (const b of document.querySelectorAll(".tab")) b.classList.toggle("active", b.dataset.tab === name);
  for (const p of document.querySelectorAll(".tabpane")) p.classList.toggle("hidden", p.id !== `tab-${name}`);
  if (name === "traces") loadTraces();
  if (name === "reports") loadReports();
}

function init() {
  for (const b of document.querySelectorAll(".tab")) b.addEventListener("click", () => showTab(b.dataset.tab));
  for (const b of document.querySelectorAll("#trace-filters [data-filter]")) {
    b.addEventListener("click", () => {
      traceFilter = b.dataset.filter;
      for (const o of document.querySelectorAll("#trace-filters [data-filter]")) o.classList.toggle("active", o === b);
      loadTraces();
    });
  }
  document.getElementById("trace-refresh").addEventListener("click", loadTraces);
  document.getElementById("report-refresh").addEventListener("click", loadReports);
  document.getElementById("report-pick").addEventListener("change", (e) => openReport(e.target.value));
  document.getElementById("reset").addEventListener("click", () => act("/api/reset", {}));
  document.getElementById("load-start").addEventListener("click", () => act("/api/load", {
    rate_per_s: Number(document.getElementById("load-rate").value),
    home: Number(document.getElementById("load-home").value),
    checkout: Number(document.getElementById("load-checkout").value),
  }));
  document.getElementById("load-stop").addEventListener("click", () => act("/api/load/stop", {}));
  const hash = new URLSearchParams(location.hash.slice(1));
  if (hash.get("trace")) {
    showTab("traces");
    openTrace(hash.get("trace"));
  }
  poll(true);
}

init();
