// The console's page: plain JavaScript over the console's JSON API, which
// answers with the clubctl commands' --json documents. No framework, nothing
// from the network but this console.
"use strict";

const token = document.querySelector('meta[name="console-token"]').content;
const actionsAllowed = document.querySelector('meta[name="console-actions"]').content === "true";
const main = document.getElementById("main");
let refreshTimer = null;

// api is the page's one way to the console; tests use it too.
const api = {
  async get(path) {
    const r = await fetch(path, { headers: { Accept: "application/json" } });
    return answer(r);
  },
  // post sends an action with the session's token.
  async post(path, body) {
    const r = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Console-Token": token },
      body: JSON.stringify(body || {}),
    });
    return answer(r);
  },
};
window.consoleAPI = api;

async function answer(r) {
  const body = await r.json().catch(() => ({}));
  if (!r.ok) {
    const e = body.error || {};
    const err = new Error(e.message || r.statusText);
    err.code = e.code || "http_" + r.status;
    err.status = r.status;
    throw err;
  }
  return body;
}

// h builds an element: h("td", {class: "num"}, "3").
function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function dur(s) {
  if (s === null || s === undefined) return "–";
  if (s < 1) return Math.round(s * 1000) + " ms";
  if (s < 60) return (Math.round(s * 10) / 10) + " s";
  const m = Math.floor(s / 60), rest = Math.round(s % 60);
  if (m < 60) return m + " m " + rest + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " m";
}

function when(t) {
  if (!t) return "–";
  return new Date(t).toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
}

function table(headers, rows, attrs) {
  return h("table", attrs || {},
    h("thead", {}, h("tr", {}, headers.map(x => h("th", { class: /^(#|visible|in flight|delayed|depth|waiting|dead letters|unpublished|attempts|moved)$/i.test(x) ? "num" : null }, x)))),
    h("tbody", {}, rows));
}

function showError(where, err) {
  where.append(h("p", { class: "error", "data-code": err.code || "" }, (err.code ? err.code + ": " : "") + err.message));
}

function render(...nodes) {
  main.replaceChildren(...nodes);
  document.getElementById("updated").textContent = "Updated " + when(new Date().toISOString()) + ".";
}

// ---- Work classes ----

async function overview() {
  const [st, hist] = await Promise.all([api.get("/api/status"), api.get("/api/history").catch(() => ({ points: [] }))]);
  const rows = st.queues.map(q => {
    const limit = q.max_age_seconds, age = q.oldest_age_seconds;
    const frac = limit && age !== null ? Math.min(1, age / limit) : 0;
    const bar = h("span", { class: "agebar" + (q.breached ? " bad" : "") }, h("span", {}));
    bar.firstChild.style.width = Math.round(frac * 100) + "%";
    let verdict = h("span", { class: "pill" }, "no class");
    if (q.class) verdict = q.breached ? h("span", { class: "pill bad" }, "BREACHED") : age === null ? h("span", { class: "pill warn" }, "?") : h("span", { class: "pill ok" }, "ok");
    return h("tr", { "data-queue": q.name },
      h("td", {}, q.name), h("td", {}, q.class || "–"),
      h("td", { class: "num" }, q.visible), h("td", { class: "num" }, q.in_flight), h("td", { class: "num" }, q.delayed),
      h("td", {}, bar, dur(age), limit ? " of " + dur(limit) : ""), h("td", {}, verdict),
      h("td", {}, q.dlq ? h("a", { href: "#/dlq/" + encodeURIComponent(q.name), class: q.dlq_depth > 0 ? "bad" : "" }, q.dlq + " (" + q.dlq_depth + ")") : "–"));
  });
  const outbox = st.outbox
    ? h("p", { id: "outbox" }, "Outbox: ", h("strong", {}, st.outbox.unpublished), " unpublished", st.outbox.unpublished ? ", oldest " + dur(st.outbox.oldest_age_seconds) + " (event " + st.outbox.oldest_event_id + ")" : "")
    : h("p", { class: "muted" }, "No outbox table in the stack file.");
  const streams = st.streams.length
    ? table(["Stream consumer", "Records behind", "Iterator age", "Source"], st.streams.map(s =>
      h("tr", {}, h("td", {}, s.consumer), h("td", { class: "num" }, s.records_behind ?? "–"), h("td", {}, dur(s.iterator_age_seconds)), h("td", { class: "muted" }, s.source))), { id: "streams" })
    : h("p", { class: "muted" }, "No stream consumer reported.");
  const attention = Object.entries(st.purchases.attention || {});
  render(
    h("h1", {}, "Work classes"),
    h("section", {}, classSummary(st.queues)),
    h("h2", {}, "Queues"),
    h("section", {},
      table(["Queue", "Class", "Visible", "In flight", "Delayed", "Oldest / max age", "Age", "DLQ"], rows, { id: "work-classes" }),
      outbox, streams,
      attention.length ? h("p", {}, "Purchases that need a person: ", attention.map(([s, n]) => h("a", { href: "#/purchases", class: "pill warn" }, s + " " + n))) : null,
      (st.problems || []).map(p => h("p", { class: "error" }, p))),
    h("h2", {}, "Alarms in ALARM"), alarmsSection(st),
    h("h2", {}, "The last hour"), charts(st, hist));
}

// classSummary is one line per work class: its queues together, the worst
// age against the class's limit, the dead letters.
function classSummary(queues) {
  const classes = new Map();
  for (const q of queues) {
    if (!q.class) continue;
    const c = classes.get(q.class) || { name: q.class, limit: q.max_age_seconds, queues: [], depth: 0, inFlight: 0, worst: null, breached: false, dead: 0 };
    c.queues.push(q.name);
    c.depth += q.visible + q.delayed;
    c.inFlight += q.in_flight;
    if (q.oldest_age_seconds !== null && (c.worst === null || q.oldest_age_seconds > c.worst)) c.worst = q.oldest_age_seconds;
    c.breached = c.breached || q.breached;
    c.dead += q.dlq_depth || 0;
    classes.set(q.class, c);
  }
  return table(["Class", "Queues", "Waiting", "In flight", "Worst age / max age", "Dead letters"], [...classes.values()].map(c =>
    h("tr", { "data-class": c.name },
      h("td", {}, h("strong", {}, c.name)), h("td", {}, c.queues.join(", ")),
      h("td", { class: "num" }, c.depth), h("td", { class: "num" }, c.inFlight),
      h("td", { class: c.breached ? "bad" : "" }, dur(c.worst), " of ", dur(c.limit), c.breached ? " — BREACHED" : ""),
      h("td", { class: "num" + (c.dead ? " bad" : "") }, c.dead))), { id: "classes" });
}

function alarmsSection(st) {
  if (!st.alarms) return h("section", { id: "alarms" }, h("p", { class: "muted" }, "Alarms not read."));
  if (!st.alarms.length) return h("section", { id: "alarms" }, h("p", { class: "ok" }, "No alarm in ALARM."));
  return h("section", { id: "alarms" }, table(["Alarm", "Since", "Reason", "Runbook"], st.alarms.map(a =>
    h("tr", { "data-alarm": a.name }, h("td", { class: "bad" }, a.name), h("td", {}, when(a.since)), h("td", {}, a.reason), h("td", {}, a.description)))));
}

// chart draws series [{name, values: [[t, v]], color}] as lines in an SVG.
function chart(title, series, unit) {
  const W = 300, H = 100, pad = 8;
  const all = series.flatMap(s => s.values);
  const svgNS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(svgNS, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", title);
  if (all.length) {
    const t0 = Math.min(...all.map(p => p[0])), t1 = Math.max(...all.map(p => p[0]), t0 + 1);
    const vmax = Math.max(1, ...all.map(p => p[1]));
    const x = t => pad + (t - t0) / (t1 - t0) * (W - 2 * pad), y = v => H - pad - v / vmax * (H - 2 * pad);
    for (const s of series) {
      if (!s.values.length) continue;
      const line = document.createElementNS(svgNS, "polyline");
      line.setAttribute("points", s.values.map(p => x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join(" "));
      line.setAttribute("fill", "none");
      line.setAttribute("stroke", s.color);
      line.setAttribute("stroke-width", "1.5");
      line.setAttribute("vector-effect", "non-scaling-stroke");
      if (s.dash) line.setAttribute("stroke-dasharray", "4 3");
      svg.append(line);
    }
    var top = "max " + (unit === "s" ? dur(vmax) : Math.round(vmax));
  }
  return h("div", { class: "chart" }, h("h3", {}, title), svg,
    h("div", { class: "legend" }, series.map(s => h("span", {}, "— " + s.name + "  ")), top ? "(" + top + ")" : "no samples yet"));
}

function charts(st, hist) {
  const pts = hist.points || [];
  const t = p => new Date(p.at).getTime() / 1000;
  const out = [];
  for (const q of st.queues) {
    const depth = pts.filter(p => p.queues[q.name]).map(p => [t(p), p.queues[q.name].visible + p.queues[q.name].in_flight]);
    const age = pts.filter(p => p.queues[q.name] && p.queues[q.name].oldest_age_seconds !== null).map(p => [t(p), p.queues[q.name].oldest_age_seconds]);
    const limit = q.max_age_seconds ? age.map(p => [p[0], q.max_age_seconds]) : [];
    const dead = pts.filter(p => p.queues[q.name] && p.queues[q.name].dlq_depth !== null).map(p => [t(p), p.queues[q.name].dlq_depth]);
    out.push(chart(q.name + ": depth", [{ name: "visible + in flight", values: depth, color: "#2459c8" }].concat(q.dlq ? [{ name: "in " + q.dlq, values: dead, color: "#b42318", dash: true }] : [])));
    if (q.class) out.push(chart(q.name + ": oldest age against " + q.class, [{ name: "age", values: age, color: "#b54708" }, { name: "max age", values: limit, color: "#b42318", dash: true }], "s"));
  }
  out.push(chart("Outbox: unpublished rows", [{ name: "unpublished", values: pts.filter(p => p.outbox_unpublished !== null).map(p => [t(p), p.outbox_unpublished]), color: "#2459c8" }]));
  const consumers = [...new Set(pts.flatMap(p => Object.keys(p.streams || {})))];
  const colors = ["#1f7a3f", "#7a3fb4", "#b54708", "#2459c8"];
  out.push(chart("Streams: lag", consumers.map((c, i) => ({
    name: c, color: colors[i % colors.length],
    values: pts.filter(p => p.streams[c]).map(p => [t(p), p.streams[c].records_behind ?? p.streams[c].iterator_age_seconds ?? 0]),
  }))));
  const fromCloudWatch = pts.filter(p => p.source === "cloudwatch");
  const note = fromCloudWatch.length
    ? "CloudWatch's one-minute metrics until " + when(fromCloudWatch[fromCloudWatch.length - 1].at) + ", then the console's own samples."
    : "Sampled by this console since it started" + (pts.length ? " (" + when(pts[0].at) + ")" : "") + ": this stack publishes no CloudWatch metrics to go further back.";
  return h("div", {}, h("p", { class: "muted", id: "charts-source" }, note), h("div", { class: "grid", id: "charts" }, out));
}

// ---- Dead letters ----

async function dlqs() {
  const list = await api.get("/api/dlqs");
  render(h("h1", {}, "Dead letters"), h("section", {}, table(["DLQ", "Queue", "Depth", "Oldest", "Reasons"], list.map(d =>
    h("tr", { "data-dlq": d.dlq },
      h("td", {}, h("a", { href: "#/dlq/" + encodeURIComponent(d.queue) }, d.dlq)), h("td", {}, d.queue),
      h("td", { class: "num" + (d.depth ? " bad" : "") }, d.depth), h("td", {}, dur(d.oldest_age_seconds)),
      h("td", {}, Object.entries(d.codes || {}).map(([c, n]) => h("span", { class: "pill" }, c + " × " + n))))), { id: "dlq-list" })));
}

async function dlq(queue) {
  const [got, moves] = await Promise.all([api.get("/api/dlqs/" + encodeURIComponent(queue) + "?max=50"), api.get("/api/redrives")]);
  const rows = got.letters.map(l => h("tr", { "data-message-id": l.message_id },
    h("td", {}, h("code", {}, l.message_id)), h("td", {}, l.type || "–"), h("td", {}, l.event_id ? h("a", { href: "#/find/" + encodeURIComponent(l.event_id) }, l.event_id) : "–"),
    h("td", {}, h("span", { class: "pill bad" }, l.dlq_code || "–"), " ", l.dlq_reason || ""),
    h("td", { class: "num" }, l.attempts), h("td", {}, when(l.occurred_at)), h("td", {}, when(l.dead_lettered_at)),
    h("td", {}, h("details", {}, h("summary", {}, "message"), h("pre", {}, l.body), h("pre", {}, JSON.stringify(l.attributes, null, 1))))));
  const mine = moves.filter(m => m.destination === got.queue);
  render(
    h("h1", {}, got.dlq, h("span", { class: "muted" }, " → " + got.queue)),
    h("section", {}, got.letters.length
      ? table(["Message", "Type", "Event", "Reason", "Attempts", "Event occurred", "Dead-lettered (last failure)", ""], rows, { id: "letters" })
      : h("p", { class: "ok", id: "letters-empty" }, got.dlq + " is empty."),
      h("p", { class: "muted" }, "Personal data is masked. The consumers record no first failure: the event's time bounds it.")),
    h("h2", {}, "Redrive"), redriveSection(got, mine));
  const running = mine.find(m => m.status === "RUNNING" || m.status === "CANCELLING");
  if (running) followMove(running.task_handle);
}

function redriveSection(got, moves) {
  const sec = h("section", { id: "redrive" });
  if (!actionsAllowed) {
    sec.append(h("p", { class: "notice", id: "read-only-note" }, "Read-only: start the console with --allow-actions to redrive."));
  } else {
    const form = h("form", { class: "action", id: "redrive-form" },
      h("div", { class: "row" },
        h("label", {}, "At most (messages, 0: all)", h("input", { name: "max", type: "number", min: "0", value: "10" })),
        h("label", {}, "Rate cap (messages per second, 0: none)", h("input", { name: "rate", type: "number", min: "0", step: "any", value: "5" }))),
      h("label", {}, "Reason (kept in the audit log)", h("input", { name: "reason", required: true, placeholder: "provider back after outage, ticket 815" })),
      h("label", {}, h("span", {}, h("input", { name: "force", type: "checkbox" }), " redrive even while the queue is late (--force)")),
      h("div", {}, h("button", { type: "submit", class: "primary" }, "Redrive to " + got.queue)));
    form.addEventListener("submit", async ev => {
      ev.preventDefault();
      const f = new FormData(form);
      try {
        const m = await api.post("/api/dlqs/" + encodeURIComponent(got.queue) + "/redrive", {
          max: Number(f.get("max")), rate_per_second: Number(f.get("rate")), reason: f.get("reason"), force: f.get("force") === "on",
        });
        followMove(m.task_handle);
      } catch (err) { showError(sec, err); }
    });
    sec.append(form);
  }
  sec.append(h("div", { id: "move" }));
  if (moves.length) {
    sec.append(h("h2", {}, "Earlier redrives"), table(["Task", "Status", "Moved", "Rate cap", "Started", "By", "Reason"], moves.map(m =>
      h("tr", {}, h("td", {}, m.task_handle), h("td", {}, m.status), h("td", { class: "num" }, m.approximate_number_of_messages_moved + " / " + m.approximate_number_of_messages_to_move),
        h("td", {}, m.max_number_of_messages_per_second ? m.max_number_of_messages_per_second + "/s" : "none"), h("td", {}, when(m.started_timestamp)), h("td", {}, m.by), h("td", {}, m.reason)))));
  }
  return sec;
}

// followMove shows a redrive's progress until it ends.
function followMove(id) {
  stopRefresh();
  const box = document.getElementById("move");
  if (!box) return;
  const tick = async () => {
    let m;
    try { m = await api.get("/api/redrives/" + encodeURIComponent(id)); } catch (err) { box.replaceChildren(); showError(box, err); return; }
    const bar = h("progress", { id: "redrive-progress", max: Math.max(1, m.approximate_number_of_messages_to_move), value: m.approximate_number_of_messages_moved });
    const cancel = h("button", { type: "button", class: "danger", id: "redrive-cancel", disabled: m.status !== "RUNNING" }, "Cancel");
    cancel.addEventListener("click", async () => {
      cancel.disabled = true;
      try { await api.post("/api/redrives/" + encodeURIComponent(id) + "/cancel"); } catch (err) { showError(box, err); }
    });
    box.replaceChildren(bar, h("p", { id: "redrive-status", "data-status": m.status },
      m.status + ": " + m.approximate_number_of_messages_moved + " of " + m.approximate_number_of_messages_to_move + " moved",
      m.max_number_of_messages_per_second ? " at most " + m.max_number_of_messages_per_second + "/s" : "", m.failure_reason ? " — " + m.failure_reason : ""),
      actionsAllowed ? cancel : "");
    if (m.status === "RUNNING" || m.status === "CANCELLING") refreshTimer = setTimeout(tick, 300);
  };
  tick();
}

// ---- Purchases ----

async function purchases() {
  const r = await api.get("/api/purchases");
  render(h("h1", {}, "Purchases that need a person"), h("section", {}, r.purchases.length
    ? table(["Purchase", "Intensive", "Student", "Status", "For", "Payment", "Provider says", "Next step"], r.purchases.map(p =>
      h("tr", { "data-purchase": p.purchase_id },
        h("td", {}, h("a", { href: "#/purchases/" + encodeURIComponent(p.purchase_id) }, p.purchase_id)), h("td", {}, p.intensive_id), h("td", {}, p.student_id),
        h("td", {}, h("span", { class: "pill warn" }, p.status)), h("td", {}, dur(p.age_seconds)), h("td", {}, p.payment_id || "–"),
        h("td", {}, p.provider_status), h("td", {}, p.next_step))), { id: "purchase-list" })
    : h("p", { class: "ok", id: "purchase-list-empty" }, "No purchase needs a person.")));
}

async function purchaseView(id) {
  const p = await api.get("/api/purchases/" + encodeURIComponent(id));
  const facts = [["Status", h("span", { class: "pill warn", id: "purchase-status" }, p.status)], ["Intensive", p.intensive_id], ["Student", p.student_id],
    ["Created", when(p.created_at)], ["Hold expires", when(p.hold_expires_at)], ["Payment", (p.payment_id || "–") + " (key " + p.payment_key + ")"],
    ["Provider's recorded answer", p.recorded_payment_status || "none recorded"], ["Late payment", p.late_payment ? "yes" : "no"],
    ["Refund", (p.refund_id || "–") + " (key " + p.refund_key + ")" + (p.recorded_refund_status ? ", " + p.recorded_refund_status : "")], ["Note", p.note || "–"]];
  if (p.reconcile) facts.push(["Provider says now", p.reconcile.provider_status], ["Next step", p.reconcile.next_step]);
  render(
    h("h1", {}, "Purchase ", h("code", {}, p.purchase_id)),
    h("section", {}, h("table", { id: "purchase-facts" }, h("tbody", {}, facts.map(([k, v]) => h("tr", {}, h("th", {}, k), h("td", {}, v)))))),
    h("h2", {}, "History"),
    h("section", {}, table(["Status", "At", "By", "Reason"], p.history.map(e => h("tr", {}, h("td", {}, e.status), h("td", {}, when(e.at)), h("td", {}, e.by || "–"), h("td", {}, e.reason || "–"))), { id: "history" })),
    h("h2", {}, "Resolve"), resolveSection(p));
}

function resolveSection(p) {
  const sec = h("section", { id: "resolve" });
  if (!p.actions.length) return sec.append(h("p", { class: "muted" }, "Only a purchase in needs_reconciliation is resolved by a person.")), sec;
  if (!actionsAllowed) return sec.append(h("p", { class: "notice", id: "read-only-note" }, "Read-only: start the console with --allow-actions to resolve.")), sec;
  const help = { confirm: "grant access: the held seat becomes taken", release: "free the held seat: no money moved", refund: "give the money back (refund-" + p.purchase_id + ")" };
  const form = h("form", { class: "action", id: "resolve-form" },
    h("label", {}, "Action", h("select", { name: "action" }, p.actions.map(a => h("option", { value: a }, a + " — " + help[a])))),
    h("label", {}, "Reason (kept in the purchase's history)", h("textarea", { name: "reason", required: true, rows: "2", placeholder: "paid per provider dashboard, ticket 812" })),
    h("label", {}, h("span", {}, h("input", { name: "force", type: "checkbox" }), " act although the provider's recorded answer contradicts it (--force)")),
    h("div", {}, h("button", { type: "submit", class: "primary" }, "Resolve")));
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    const f = new FormData(form);
    try {
      const out = await api.post("/api/purchases/" + encodeURIComponent(p.purchase_id) + "/resolve", { action: f.get("action"), reason: f.get("reason"), force: f.get("force") === "on" });
      await purchaseView(p.purchase_id);
      document.getElementById("resolve").append(h("p", { class: "ok", id: "resolve-result" }, "Purchase is " + out.status + " (" + out.action + " by " + out.by + ")."));
    } catch (err) { showError(sec, err); }
  });
  sec.append(form);
  return sec;
}

// ---- Alarms, capacity, find ----

async function alarms() {
  const st = await api.get("/api/status");
  render(h("h1", {}, "Alarms in ALARM"), alarmsSection(st));
}

async function capacityView() {
  const params = new URLSearchParams(location.hash.split("?")[1] || "backlog=6000&arrival=80&rate=100&deadline=10m");
  const field = (name, label, placeholder) => h("label", {}, label, h("input", { name, value: params.get(name) || "", placeholder }));
  const form = h("form", { class: "action", id: "capacity-form" }, h("div", { class: "row" },
    field("backlog", "Backlog (messages)"), field("arrival", "Arriving (/s)"), field("rate", "Completed (/s)"), field("deadline", "Promise (e.g. 10m)"),
    field("failure-rate", "Simulated: failing attempts (0 to 1)", "0"), field("workers", "Simulated: consumers", "10"),
    h("button", { type: "submit", class: "primary" }, "Compute")));
  form.addEventListener("submit", ev => {
    ev.preventDefault();
    location.hash = "#/capacity?" + new URLSearchParams(new FormData(form)).toString();
  });
  const out = h("section", { id: "capacity-result" });
  render(h("h1", {}, "Capacity"), h("section", {}, form), out);
  try {
    const c = await api.get("/api/capacity?" + params.toString());
    const verdict = c.drains ? "Drains in " + dur(c.drain_seconds) + "; no message waits longer than " + dur(c.worst_wait_seconds) + "."
      : "Never drains: " + (c.arrival_per_second - c.rate_per_second) + "/s more arrive than are completed.";
    out.append(h("p", { id: "capacity-verdict", class: c.drains ? "ok" : "bad" }, verdict));
    if (c.holds !== undefined) out.append(h("p", { class: c.holds ? "ok" : "bad" }, c.holds ? "The promise holds." : "The promise cannot hold: it needs " + Math.round(c.required_rate_per_second * 10) / 10 + "/s."));
    const sim = c.simulation;
    if (sim) {
      const model = [[0, c.backlog]];
      if (c.drains) model.push([c.drain_seconds, 0]); else model.push([sim.horizon_seconds, c.backlog - c.net_drain_per_second * sim.horizon_seconds]);
      out.append(chart("Waiting messages over time: simulation against the model", [
        { name: "simulated", values: sim.curve.map(p => [p.t, p.waiting]), color: "#2459c8" },
        { name: "model B − (R − A)·t", values: model, color: "#b42318", dash: true }]),
      h("p", { class: "muted" }, sim.arrived + " arrived, " + sim.done + " done, " + sim.dead_lettered + " dead-lettered over " + dur(sim.horizon_seconds) + "."));
    }
  } catch (err) { showError(out, err); }
}

async function find(id) {
  document.getElementById("find-input").value = id;
  const r = await api.get("/api/find/" + encodeURIComponent(id));
  const order = { "club table": 0, outbox: 1, inbox: 2, queue: 3, dlq: 4, saga: 5 };
  const places = r.places.slice().sort((a, b) => (order[a.where] - order[b.where]) || String(a.at).localeCompare(String(b.at)));
  render(h("h1", {}, "Where is ", h("code", {}, r.id), "?"),
    h("section", { id: "find-results" }, places.length
      ? table(["Where", "What", "Key", "Status", "At", ""], places.map(p => h("tr", { class: "place", "data-where": p.where, "data-kind": p.kind },
        h("td", {}, p.where), h("td", {}, p.kind), h("td", {}, h("code", {}, p.key)), h("td", {}, p.status || "–"), h("td", {}, when(p.at)),
        h("td", {}, p.detail ? h("details", {}, h("summary", {}, "detail"), h("pre", {}, JSON.stringify(p.detail, null, 1))) : "",
          p.where === "club table" && p.kind === "purchase" ? h("a", { href: "#/purchases/" + encodeURIComponent(r.id) }, "open") : "",
          p.where === "dlq" ? h("a", { href: "#/dlq/" + encodeURIComponent(p.kind) }, "open") : ""))))
      : h("p", { class: "notice", id: "find-nothing" }, "Found nowhere: not in the club table, the outbox, the inboxes, the DLQs or the saga's executions."),
      (r.problems || []).map(p => h("p", { class: "error" }, p))));
}

// ---- Routing ----

function stopRefresh() {
  if (refreshTimer) clearTimeout(refreshTimer);
  refreshTimer = null;
}

async function route() {
  stopRefresh();
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path] = hash.split("?");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const page = parts[0] || "overview";
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.page === page);
  try {
    switch (page) {
      // Every 30 s: the status counts purchases, which scans the club table.
      case "overview": await overview(); refreshTimer = setTimeout(route, 30000); break;
      case "dlq": parts[1] ? await dlq(parts[1]) : await dlqs(); break;
      case "purchases": parts[1] ? await purchaseView(parts[1]) : await purchases(); break;
      case "alarms": await alarms(); break;
      case "capacity": await capacityView(); break;
      case "find": await find(parts.slice(1).join("/")); break;
      default: render(h("p", { class: "error" }, "No page " + hash));
    }
    main.dataset.loaded = page;
  } catch (err) {
    render(h("h1", {}, "Could not load"));
    showError(main, err);
    main.dataset.loaded = "error";
  }
}

document.getElementById("find-form").addEventListener("submit", ev => {
  ev.preventDefault();
  const id = document.getElementById("find-input").value.trim();
  if (id) location.hash = "#/find/" + encodeURIComponent(id);
});
const mode = document.getElementById("mode");
mode.textContent = actionsAllowed ? "actions allowed" : "read-only";
mode.classList.toggle("actions", actionsAllowed);
window.addEventListener("hashchange", route);
window.consoleRoute = route;
route();
