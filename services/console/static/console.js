// ragline operator console: vanilla JS, no dependencies, nothing loaded from elsewhere.
// Every page calls the console's JSON API (/console/api/*), the same one a script can use.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
let SESSION = null;

function h(tag, attrs = {}, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "width") el.style.width = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const kid of kids.flat()) {
    if (kid === null || kid === undefined || kid === false) continue;
    el.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }
  return el;
}

function fmt(v, digits = 3) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "number" && !Number.isInteger(v)) return v.toFixed(digits);
  return String(v);
}

function showError(msg, what) {
  const box = $("#error") || $("#status");
  box.hidden = false;
  box.replaceChildren(h("strong", {}, msg), what ? h("div", {}, what) : null);
}

function clearError() {
  const box = $("#error");
  if (box) { box.hidden = true; box.replaceChildren(); }
}

async function api(path, { method = "GET", body = null } = {}) {
  const headers = { "accept": "application/json" };
  if (body !== null) headers["content-type"] = "application/json";
  if (method !== "GET" && SESSION && SESSION.csrf) headers["x-csrf-token"] = SESSION.csrf;
  let resp;
  try {
    resp = await fetch(path, { method, headers, credentials: "same-origin",
      body: body === null ? null : JSON.stringify(body) });
  } catch (e) {
    throw new Error("The console did not answer: is `ragline console` still running?");
  }
  const data = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = new Error(data.detail || data.title || `HTTP ${resp.status}`);
    err.status = resp.status;
    throw err;
  }
  return data;
}

function advice(e) {
  if (e.status === 401) return "Your session ended: sign in again at /console/login.";
  if (e.status === 403) return "Your token lacks the rights for this (admin role, or this tenant).";
  if (e.status === 503) return "A backend is down: see the Pipeline page for which one.";
  if (e.status === 409) return "The state changed meanwhile: reload and look again.";
  if (e.status === 400 || e.status === 422) return "Check the form's values.";
  return "See the console's log for details.";
}

async function guarded(fn) {
  clearError();
  try { return await fn(); } catch (e) { showError(e.message, advice(e)); return null; }
}

function confirmDialog(text, okLabel = "Confirm") {
  const dlg = $("#confirm");
  $("#confirm-text").textContent = text;
  $("#confirm-ok").textContent = okLabel;
  return new Promise((resolve) => {
    dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
    dlg.showModal();
    $("#confirm-cancel").focus();
  });
}

function empty(msg) { return h("div", { class: "empty", role: "status" }, msg); }

function table(cols, rows, emptyMsg) {
  if (!rows.length) return empty(emptyMsg);
  return h("table", {},
    h("thead", {}, h("tr", {}, cols.map(c => h("th", { class: c.num ? "num" : null, scope: "col" }, c.label)))),
    h("tbody", {}, rows.map(r => h("tr", {}, cols.map(c => {
      const v = c.get(r);
      return h("td", { class: c.num ? "num" : (c.cls || null) }, v instanceof Node ? v : fmt(v));
    })))));
}

function field(id, label, attrs = {}) {
  const key = `ragline-console:${id}`;
  const saved = sessionStorage.getItem(key);
  const input = h("input", { id, name: id, ...attrs });
  if (attrs.type === "checkbox") {
    if (saved !== null) input.checked = saved === "1";
    input.addEventListener("change", () => sessionStorage.setItem(key, input.checked ? "1" : "0"));
    return h("div", { class: "check" }, input, " ", h("label", { for: id }, label));
  }
  if (saved !== null && !attrs.value) input.value = saved;
  input.addEventListener("change", () => sessionStorage.setItem(key, input.value));
  return h("div", {}, h("label", { for: id }, label), input);
}

function select(id, label, options, value) {
  const el = h("select", { id, name: id }, options.map(o => h("option", { value: o }, o)));
  if (value) el.value = value;
  return h("div", {}, h("label", { for: id }, label), el);
}

function defaultTenant() {
  const t = (SESSION && SESSION.tenants || []).find(x => x !== "*");
  return t || "demo";
}

function principalFields() {
  return h("div", { class: "grid" },
    field("tenant", "Tenant", { required: true, value: sessionStorage.getItem("ragline-console:tenant") || defaultTenant() }),
    field("groups", "Groups (comma-separated)", { required: true, placeholder: "all,eng" }),
    field("as_of", "As of (YYYY-MM-DD)", { placeholder: "today", pattern: "\\d{4}-\\d{2}-\\d{2}" }),
    field("versions", "Version scope (comma-separated)", { placeholder: "any" }),
    select("mode", "Mode", ["hybrid", "dense", "lexical"], sessionStorage.getItem("ragline-console:mode")),
    field("top_k", "top_k", { type: "number", min: 1, max: 50, value: sessionStorage.getItem("ragline-console:top_k") || 10 }),
    field("max_per_document", "Max per document", { type: "number", min: 1, max: 100 }),
    field("include_history", "Include history", { type: "checkbox" }),
    field("expand_parents", "Expand parents", { type: "checkbox" }));
}

function searchBody() {
  const list = (v) => v.split(",").map(s => s.trim()).filter(Boolean);
  const body = {
    principal: { tenant: $("#tenant").value.trim(), groups: list($("#groups").value) },
    query: $("#query").value.trim(),
    top_k: Number($("#top_k").value || 10),
    mode: $("#mode").value,
    include_history: $("#include_history").checked,
    expand_parents: $("#expand_parents").checked,
  };
  if ($("#as_of").value) body.as_of = $("#as_of").value;
  if ($("#versions").value.trim()) body.versions = list($("#versions").value);
  if ($("#max_per_document").value) body.max_per_document = Number($("#max_per_document").value);
  return body;
}

// ---------------------------------------------------------------- search playground
function pageSearch(view) {
  const out = h("div", { id: "results" });
  const form = h("form", { class: "panel", id: "search-form" },
    principalFields(),
    h("div", { class: "row" },
      h("div", { width: "60%" }, field("query", "Query", { required: true, placeholder: "what does error GW-5031 mean?" })),
      h("button", { type: "submit", id: "go" }, "Search as this principal")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = searchBody();
    out.replaceChildren(h("p", { class: "muted" }, "Searching…"));
    const r = await guarded(() => api("/console/api/search", { method: "POST", body }));
    out.replaceChildren(r ? renderSearch(r) : empty("No answer: see the error above."));
  });
  view.append(form, out);
}

function renderSearch(r) {
  const abst = h("div", { class: `panel verdict ${r.abstained ? "" : "ok"}`, id: "abstain" },
    h("h2", {}, r.abstained ? `Abstained: ${r.abstain_reason}` : "Answered"),
    h("p", {}, `signal ${fmt(r.evidence && r.evidence.signal)} · best similarity ${fmt(r.evidence && r.evidence.best_similarity)}`,
      ` · threshold ${fmt(r.evidence && r.evidence.threshold)} · best rerank ${fmt(r.evidence && r.evidence.best_rerank)}`),
    h("p", { class: "muted" }, `mode ${r.mode} · cache ${r.cache} · trace ${r.trace_id}`,
      r.degraded && r.degraded.length ? ` · degraded: ${r.degraded.join(", ")}` : "",
      ` · version scope ${JSON.stringify(r.version_scope)}`));
  const cols = [
    { label: "#", num: true, get: (x) => x._rank },
    { label: "Document / citation", get: (x) => h("div", {},
        h("strong", {}, x.citation.title || x.document_id), h("br"),
        h("span", { class: "muted" }, x.document_id, x.citation.section_path.length ? ` › ${x.citation.section_path.join(" › ")}` : ""),
        x.citation.version ? h("span", { class: "badge" }, `v ${x.citation.version}`) : null) },
    { label: "Text", cls: "text", get: (x) => x.text.length > 240 ? x.text.slice(0, 240) + "…" : x.text },
    { label: "BM25 rank", num: true, get: (x) => x.scores.bm25_rank },
    { label: "BM25 score", num: true, get: (x) => x.scores.bm25_score },
    { label: "Dense rank", num: true, get: (x) => x.scores.dense_rank },
    { label: "Cosine", num: true, get: (x) => x.scores.dense_score },
    { label: "Fused", num: true, get: (x) => (x.scores.fused ?? x.scores.rrf) == null ? null : Number(x.scores.fused ?? x.scores.rrf).toFixed(4) },
    { label: "Flags", get: (x) => h("span", {},
        x.flags.injection_suspect ? h("span", { class: "badge bad" }, "injection") : null,
        x.flags.contains_pii ? h("span", { class: "badge warn" }, "PII") : null,
        x.flags.source_trust ? h("span", { class: "badge" }, `trust ${x.flags.source_trust}`) : null) },
  ];
  const rows = r.results.map((x, i) => ({ ...x, _rank: i + 1 }));
  const timings = Object.entries(r.timings_ms || {}).map(([k, v]) => ({ stage: k, ms: v }));
  return h("div", {}, abst,
    h("h2", {}, `Results (${rows.length})`),
    table(cols, rows, r.abstained
      ? "No results: the search abstained (the reason is above). Try a more specific query, or check the Why not? page for a document you expected."
      : "No results for this principal: its groups may not cover any document. Try the Why not? page with a document you expected."),
    h("h2", {}, "Timings (ms)"),
    table([{ label: "Stage", get: (t) => t.stage }, { label: "ms", num: true, get: (t) => Number(t.ms).toFixed(1) }],
      timings, "No timings recorded."));
}

// ---------------------------------------------------------------- why not
function pageWhyNot(view) {
  const out = h("div", { id: "explanation" });
  const params = new URLSearchParams(location.search);
  const form = h("form", { class: "panel", id: "whynot-form" },
    principalFields(),
    h("div", { class: "grid" },
      field("document_id", "Document id", { placeholder: "fs:handbook.md", value: params.get("document") || "" }),
      field("chunk_id", "…or chunk id", { placeholder: "sha256 of a chunk" })),
    h("div", { class: "row" },
      h("div", { width: "60%" }, field("query", "Query", { required: true })),
      h("button", { type: "submit", id: "explain" }, "Explain")));
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = searchBody();
    const doc = $("#document_id").value.trim(), chunk = $("#chunk_id").value.trim();
    if (!doc && !chunk) { showError("Give a document id or a chunk id.", "The id is <source>:<external id>, as the Documents page lists it."); return; }
    if (doc) body.document_id = doc; else body.chunk_id = chunk;
    out.replaceChildren(h("p", { class: "muted" }, "Explaining…"));
    const r = await guarded(() => api("/console/api/explain", { method: "POST", body }));
    out.replaceChildren(r ? renderExplanation(r) : empty("No explanation: see the error above."));
  });
  view.append(form, out);
}

function renderExplanation(x) {
  const good = x.cause === "in_results";
  const parts = [h("div", { class: `panel verdict ${good ? "ok" : ""}`, id: "verdict" },
    h("h2", {}, h("span", { class: `badge ${good ? "ok" : "bad"}`, id: "cause" }, x.cause), " ", x.summary),
    x.fix ? h("p", {}, h("strong", {}, "What to do: "), x.fix) : null)];
  parts.push(h("h2", {}, "Checks, in the order the platform applies them"));
  parts.push(table([
    { label: "", get: (c) => h("span", { class: `badge ${c.ok ? "ok" : "bad"}` }, c.ok ? "pass" : "fail") },
    { label: "Check", get: (c) => c.name },
    { label: "Detail", get: (c) => c.detail }], x.checks, "No checks ran."));
  if (x.ranks && x.ranks.length) {
    parts.push(h("h2", {}, "Ranks in each leg"));
    parts.push(table([
      { label: "Sub-query", num: true, get: (r) => r.query_index },
      { label: "Dense rank", num: true, get: (r) => r.dense_rank === null ? `> ${r.depth}` : r.dense_rank },
      { label: "BM25 rank", num: true, get: (r) => r.bm25_rank === null ? `> ${r.depth}` : r.bm25_rank },
      { label: "Each leg reads", num: true, get: (r) => r.overfetch }], x.ranks, ""));
  }
  if (x.document) parts.push(h("h2", {}, "What the stores hold"), facts(x.document));
  return h("div", {}, parts);
}

function facts(d) {
  const keep = ["document_id", "state", "status", "pipeline_status", "stage", "reason_code", "reason",
    "generation", "source_seq", "content_hash", "pipeline_content_hash", "acl_groups", "classification",
    "title", "version", "superseded", "superseded_by", "effective_date", "expiry_date", "chunk_count",
    "indexed_at", "updated_at"];
  return h("dl", { class: "facts panel" }, keep.filter(k => d[k] !== null && d[k] !== undefined && !(Array.isArray(d[k]) && !d[k].length && k !== "acl_groups"))
    .map(k => [h("dt", {}, k), h("dd", {}, Array.isArray(d[k]) ? (d[k].join(", ") || "(none: nobody can read it)") : fmt(d[k]))]).flat());
}

// ---------------------------------------------------------------- documents
function pageDocuments(view) {
  const list = h("div", { id: "doc-list" }), detail = h("div", { id: "doc-detail" });
  const form = h("form", { class: "panel", id: "docs-form" },
    h("div", { class: "grid" },
      field("tenant", "Tenant", { required: true, value: sessionStorage.getItem("ragline-console:tenant") || defaultTenant() }),
      select("state", "State", ["all", "indexed", "quarantined", "in_flight", "failed", "deleted", "no_readers"]),
      field("prefix", "Id prefix", { placeholder: "fs:" })),
    h("div", { class: "row" }, h("button", { type: "submit", id: "list-docs" }, "List documents")));
  async function load() {
    const q = new URLSearchParams({ tenant: $("#tenant").value.trim(), state: $("#state").value });
    if ($("#prefix").value.trim()) q.set("prefix", $("#prefix").value.trim());
    const r = await guarded(() => api(`/console/api/documents?${q}`));
    if (!r) return;
    list.replaceChildren(table([
      { label: "Document", get: (d) => h("button", { class: "secondary", type: "button", "data-doc": d.document_id,
          onclick: () => openDoc($("#tenant").value.trim(), d.document_id, detail) }, d.document_id) },
      { label: "State", get: (d) => h("span", { class: `badge ${["indexed"].includes(d.state) ? "ok" : (["quarantined", "failed", "no_readers"].includes(d.state) ? "bad" : "warn")}` }, d.state) },
      { label: "Gen", num: true, get: (d) => d.generation },
      { label: "Seq", num: true, get: (d) => d.source_seq },
      { label: "ACL", get: (d) => d.acl_groups.join(", ") || "(nobody)" },
      { label: "Reason", get: (d) => d.reason_code },
      { label: "Updated", get: (d) => (d.updated_at || "").slice(0, 19) }],
      r.documents, `No ${$("#state").value === "all" ? "" : $("#state").value + " "}documents in tenant ${$("#tenant").value}. Check the tenant id, or ingest a folder: ragline sync <dir> --tenant ${$("#tenant").value}.`));
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  view.append(form, list, detail);
}

async function openDoc(tenant, id, into) {
  const q = new URLSearchParams({ tenant, id });
  const r = await guarded(() => api(`/console/api/document?${q}`));
  if (!r) return;
  const act = async (kind, label) => {
    const preview = await guarded(() => api(`/console/api/document/${kind}?${q}`, { method: "POST", body: { confirm: false } }));
    if (!preview) return;
    const what = kind === "repair" ? preview.would
      : `Replay ${preview.handled} pending dead letter(s) of ${id} into the pipeline (interactive lane).`;
    if (kind === "resend" && !preview.handled) { showError(`Nothing to re-send: ${id} has no pending dead letters.`, "If it is stuck, look at its status above, or sync its source again."); return; }
    if (!(await confirmDialog(what, label))) return;
    const done = await guarded(() => api(`/console/api/document/${kind}?${q}`, { method: "POST", body: { confirm: true } }));
    if (done) into.querySelector(".actions-out").replaceChildren(h("pre", {}, JSON.stringify(done, null, 2)));
  };
  into.replaceChildren(h("h2", { id: "doc-title", tabindex: "-1" }, id), facts(r.document),
    h("div", { class: "row" },
      h("button", { type: "button", id: "repair", onclick: () => act("repair", "Repair") }, "Repair OpenSearch copy"),
      h("button", { type: "button", id: "resend", class: "secondary", onclick: () => act("resend", "Re-send") }, "Re-send dead letters"),
      h("a", { href: `/console/whynot?document=${encodeURIComponent(id)}` }, "Why not in my results?")),
    h("div", { class: "actions-out" }),
    h("h2", {}, "Last errors (its pending dead letters)"),
    typeof r.dead_letters === "string" ? empty(`Unknown: ${r.dead_letters}. See the Pipeline page.`) :
    table([
      { label: "Failed at", get: (e) => e.failed_at.slice(0, 19).replace("T", " ") },
      { label: "Stage", get: (e) => e.stage },
      { label: "Error", get: (e) => h("span", {}, h("strong", {}, e.error_class), " ", e.error_message) },
      { label: "Tries", num: true, get: (e) => e.attempts }],
      r.dead_letters, "No pending dead letters for this document: nothing of it failed in the pipeline (its status above says where it is)."),
    h("h2", {}, "Timeline"),
    table([
      { label: "When", get: (e) => e.at.slice(0, 19).replace("T", " ") },
      { label: "Source", get: (e) => e.source },
      { label: "What", get: (e) => e.what },
      { label: "Seq", num: true, get: (e) => e.seq },
      { label: "Detail", get: (e) => e.detail ? JSON.stringify(e.detail) : "" }],
      r.timeline, "No history kept for this document (the ledger may have been pruned by retention)."));
  $("#doc-title").focus();
}

// ---------------------------------------------------------------- dead letters
const DLQ_TOPICS = ["source.changes.dlq", "doc.fetched.dlq", "doc.parsed.dlq", "doc.scanned.dlq",
  "doc.chunked.dlq", "doc.enriched.dlq", "doc.embedded.dlq", "doc.control.dlq", "doc.quarantined.dlq", "doc.indexed.dlq"];

function pageDeadLetters(view) {
  const out = h("div", { id: "dlq" });
  const form = h("form", { class: "panel", id: "dlq-form" },
    h("div", { class: "grid" },
      select("topic", "Topic", ["(all)", ...DLQ_TOPICS]),
      field("dlq_tenant", "Tenant", { placeholder: "any you administer" }),
      field("error_class", "Error class", { placeholder: "any" })),
    h("div", { class: "row" }, h("button", { type: "submit", id: "list-dlq" }, "List dead letters")));
  function params() {
    const q = new URLSearchParams();
    if ($("#topic").value !== "(all)") q.set("topic", $("#topic").value);
    if ($("#dlq_tenant").value.trim()) q.set("tenant", $("#dlq_tenant").value.trim());
    if ($("#error_class").value.trim()) q.set("error_class", $("#error_class").value.trim());
    return q;
  }
  async function load() {
    out.replaceChildren(h("p", { class: "muted" }, "Reading the dead-letter topics…"));
    const r = await guarded(() => api(`/console/api/dead-letters?${params()}`));
    if (!r) { out.replaceChildren(); return; }
    const inspect = h("div", { id: "inspect" });
    const topics = r.topics.filter(t => t.pending);
    out.replaceChildren(
      h("h2", {}, "Per topic"),
      table([
        { label: "Topic", get: (t) => t.topic },
        { label: "Pending", num: true, get: (t) => t.pending },
        { label: "Selected", num: true, get: (t) => t.selected },
        { label: "Error classes", get: (t) => Object.entries(t.by_error_class).map(([k, v]) => `${k} ${v}`).join(", ") },
        { label: "First seen", get: (t) => (t.oldest || "").slice(0, 19) },
        { label: "Last seen", get: (t) => (t.newest || "").slice(0, 19) },
        { label: "Actions", get: (t) => h("span", {},
            h("button", { type: "button", class: "secondary", "data-replay": t.topic, onclick: () => act("replay", t.topic) }, "Replay"), " ",
            h("button", { type: "button", class: "danger", "data-purge": t.topic, onclick: () => act("purge", t.topic) }, "Purge")) }],
        topics, "No dead letters pending: nothing failed (or everything was replayed or purged). Failed messages land here with their reason."),
      h("h2", {}, "Entries"),
      table([
        { label: "Where", get: (e) => `${e.dlq_topic}[${e.partition}]@${e.offset}` },
        { label: "Failed at", get: (e) => e.failed_at.slice(0, 19) },
        { label: "Stage", get: (e) => e.stage },
        { label: "Error", get: (e) => h("span", {}, h("strong", {}, e.error_class), h("br"), e.error_message) },
        { label: "Tries", num: true, get: (e) => e.attempts },
        { label: "Tenant", get: (e) => e.tenant_id },
        { label: "Document (redacted)", get: (e) => e.document },
        { label: "", get: (e) => h("button", { type: "button", class: "secondary", "data-inspect": `${e.dlq_topic}@${e.offset}`,
            onclick: () => inspect.replaceChildren(h("h2", {}, "Inspect (never the payload)"), h("pre", { tabindex: "0" }, JSON.stringify(e, null, 2))) }, "Inspect") }],
        r.records, "No entries match these filters."),
      inspect);
  }
  async function act(action, topic) {
    const body = { topic, confirm: false };
    if ($("#dlq_tenant").value.trim()) body.tenant = $("#dlq_tenant").value.trim();
    if ($("#error_class").value.trim()) body.error_class = $("#error_class").value.trim();
    const preview = await guarded(() => api(`/console/api/dead-letters/${action}`, { method: "POST", body }));
    if (!preview) return;
    const verb = action === "replay" ? "Replay (bulk lane)" : "Purge (drop for good)";
    if (!(await confirmDialog(`${verb} ${preview.handled} dead letter(s) of ${topic}?`, action === "replay" ? "Replay" : "Purge"))) return;
    const done = await guarded(() => api(`/console/api/dead-letters/${action}`, { method: "POST", body: { ...body, confirm: true } }));
    if (done) { await load(); out.prepend(h("p", { class: "badge ok", role: "status" }, `${action}: ${done.handled} handled`)); }
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); load(); });
  view.append(form, out);
  load();
}

// ---------------------------------------------------------------- pipeline
function pagePipeline(view) {
  const out = h("div", { id: "pipeline" });
  const refresh = h("button", { type: "button", id: "refresh", onclick: () => load() }, "Refresh");
  async function load() {
    const r = await guarded(() => api("/console/api/pipeline"));
    if (!r) return;
    const badge = (s) => h("span", { class: `badge ${s === "ok" ? "ok" : "bad"}` }, s);
    out.replaceChildren(
      h("h2", {}, "Engines"),
      h("p", { id: "engines" }, Object.entries(r.engines).map(([k, v]) => [h("strong", {}, k), " ", badge(v), "  "]).flat()),
      h("h2", {}, "Throughput (events the indexer applied)"),
      h("p", { id: "throughput" }, typeof r.throughput === "string" ? r.throughput
        : `${r.throughput.last_5_min} in the last 5 minutes · ${r.throughput.last_60_min} in the last hour`),
      h("h2", {}, `Backlog per stage and lane (total ${r.total_lag})`),
      table([
        { label: "Stage", get: (x) => x.stage },
        { label: "Topic", get: (x) => x.topic },
        { label: "Lane", get: (x) => x.lane },
        { label: "Lag (records)", num: true, get: (x) => x.lag }],
        r.lag, "No backlog figures: Kafka did not answer (see Engines). Start the stack with `make up`."),
      h("h2", {}, "Services (local supervisor)"),
      table([
        { label: "Service", get: (s) => s.name },
        { label: "Health", get: (s) => badge(s.healthy ? "ok" : (s.alive ? "starting" : "stopped")) },
        { label: "PID", num: true, get: (s) => s.pid },
        { label: "Address", get: (s) => s.address }],
        r.services, "No local services: on Kubernetes see the Deployments' readiness instead."));
  }
  view.append(h("div", { class: "row" }, refresh), out);
  load();
}

// ---------------------------------------------------------------- spaces
function pageSpaces(view) {
  const out = h("div", { id: "spaces" });
  async function load() {
    const r = await guarded(() => api("/console/api/spaces"));
    if (!r) return;
    out.replaceChildren(
      table([
        { label: "Space", get: (s) => s.name },
        { label: "State", get: (s) => h("span", { class: `badge ${s.state === "live" ? "ok" : ""}` }, s.state) },
        { label: "Dim", num: true, get: (s) => s.dim },
        { label: "Recipe", get: (s) => s.recipe },
        { label: "Vectors (backfill progress)", get: (s) => s.children ? h("div", {},
            h("div", { class: "bar", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": s.children, "aria-valuenow": s.vectors },
              (() => { const b = h("span"); b.style.width = `${Math.min(100, 100 * s.vectors / s.children)}%`; return b; })()),
            `${s.vectors} / ${s.children} vectors`) : "—" },
        { label: "Promoted", get: (s) => (s.promoted_at || "").slice(0, 19) },
        { label: "Actions", get: (s) => s.state === "shadow"
            ? h("button", { type: "button", class: "danger", "data-flip": s.name, onclick: () => act("flip", s.name) }, "Flip live")
            : "" }],
        r.spaces, "No embedding spaces registered: migrations create the primary one; run `ragline migrate`."),
      h("div", { class: "row" },
        h("button", { type: "button", class: "secondary", id: "rollback", onclick: () => act("rollback", null) }, "Roll back the last flip")),
      h("p", { class: "muted" }, "The evaluation gate (golden set, live vs shadow) runs with ",
        h("code", {}, "ragline embeddings promote <space>"), "; a flip here skips it and is recorded as forced, with your reason."),
      h("h2", {}, "Gate comparisons and flips"),
      table([
        { label: "When", get: (e) => e.at.slice(0, 19).replace("T", " ") },
        { label: "Action", get: (e) => e.action + (e.forced ? " (forced)" : "") },
        { label: "Space", get: (e) => e.space },
        { label: "From", get: (e) => e.from_space },
        { label: "Actor", get: (e) => e.actor },
        { label: "Reason", get: (e) => e.reason },
        { label: "Evidence", get: (e) => e.evidence ? h("pre", { tabindex: "0" }, JSON.stringify(e.evidence, null, 1)) : "" }],
        r.events, "No gate run or flip yet."));
  }
  async function act(action, space) {
    const reason = $("#reason").value.trim();
    if (reason.length < 3) { showError("Give a reason first (it is audited).", "Type it in the Reason field above."); $("#reason").focus(); return; }
    const body = { space, reason, confirm: false };
    const preview = await guarded(() => api(`/console/api/spaces/${action}`, { method: "POST", body }));
    if (!preview) return;
    if (!(await confirmDialog(`${preview.would}? Every tenant's searches switch at once.`, action === "flip" ? "Flip" : "Roll back"))) return;
    const done = await guarded(() => api(`/console/api/spaces/${action}`, { method: "POST", body: { ...body, confirm: true } }));
    if (done) { await load(); out.prepend(h("p", { class: "badge ok", role: "status" }, `live space: ${done.from} → ${done.to}`)); }
  }
  view.append(h("div", { class: "panel" }, field("reason", "Reason for a flip or rollback (audited)", { placeholder: "why" })), out);
  load();
}

// ---------------------------------------------------------------- audit
function pageAudit(view) {
  const out = h("div", { id: "audit" });
  view.append(out);
  guarded(async () => {
    const r = await api("/console/api/audit");
    out.replaceChildren(table([
      { label: "When", get: (e) => e.at.slice(0, 19).replace("T", " ") },
      { label: "Who", get: (e) => e.actor },
      { label: "Action", get: (e) => e.action },
      { label: "Tenant", get: (e) => e.tenant_id },
      { label: "Target", get: (e) => JSON.stringify(e.target) },
      { label: "Outcome", get: (e) => e.outcome }], r.entries, "No console actions recorded yet."));
  });
}

// ---------------------------------------------------------------- boot
const PAGES = { search: pageSearch, whynot: pageWhyNot, documents: pageDocuments,
  "dead-letters": pageDeadLetters, pipeline: pagePipeline, spaces: pageSpaces, audit: pageAudit };

async function boot() {
  const page = document.body.dataset.page;
  if (page === "login") {
    $("#login-form").addEventListener("submit", async (ev) => {
      ev.preventDefault();
      try {
        await api("/console/api/login", { method: "POST", body: { token: $("#token").value.trim() } });
        const next = new URLSearchParams(location.search).get("next") || "search";
        location.assign(`/console/${encodeURIComponent(next)}`);
      } catch (e) {
        showError(e.message, e.status === 403 ? "This token has no admin role: mint one with --admin." : "Check the token (expired? signed with another secret?).");
      }
    });
    $("#token").focus();
    return;
  }
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === page) a.setAttribute("aria-current", "page");
  }
  try {
    SESSION = await api("/console/api/session");
    $("#who").textContent = `${SESSION.subject} · tenants ${SESSION.tenants.join(", ")}`;
  } catch (e) {
    showError(e.message, advice(e));
    return;
  }
  $("#sign-out").addEventListener("click", async () => {
    await guarded(() => api("/console/api/logout", { method: "POST", body: {} }));
    location.assign("/console/login");
  });
  PAGES[page]($("#view"));
}

boot();
