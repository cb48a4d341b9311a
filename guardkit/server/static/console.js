// guardkit operator console. Agent-controlled data is only ever written as text nodes, and
// characters a reader can't see (bidirectional overrides, zero-width, tags) are shown escaped.
"use strict";

const KEY = "guardkit.operatorToken";
const LOG_PAGE = 50;
const $ = (id) => document.getElementById(id);
// Format and control characters, separators, fillers and variation selectors; newlines and
// tabs stay, because the JSON and the log are laid out with them.
const HIDDEN = /(?![\n\t])[\p{Cf}\p{Cc}\p{Zl}\p{Zp}\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180f\u3164\ufe00-\ufe0f\uffa0\u{e0100}-\u{e01ef}]/gu;

function token() { return sessionStorage.getItem(KEY) || ""; }

function codePoint(ch) {
  return "U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
}

// Write text into node: each hidden character becomes a marked, visible escape (\u202e).
function fill(node, text) {
  node.replaceChildren();
  let last = 0;
  for (const match of text.matchAll(HIDDEN)) {
    if (match.index > last) node.append(document.createTextNode(text.slice(last, match.index)));
    const escape = "\\u" + codePoint(match[0]).slice(2).toLowerCase();
    const mark = document.createElement("mark");
    mark.className = "hidden-char";
    mark.title = "invisible character " + codePoint(match[0]);
    mark.textContent = escape.length > 6 ? "\\u{" + escape.slice(2) + "}" : escape;
    node.append(mark);
    last = match.index + match[0].length;
  }
  if (last < text.length) node.append(document.createTextNode(text.slice(last)));
  return node;
}

function el(tag, text, attrs) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) fill(node, String(text));
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  return node;
}

function say(text, isError) {
  fill($("message"), text);
  $("message").className = isError ? "error" : "";
}

async function api(method, path, body) {
  const init = { method, headers: { Authorization: "Bearer " + token() } };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw new Error(response.status + " " + data.code + ": " + data.error);
  return data;
}

function agentPath(id) { return "/v1/agents/" + encodeURIComponent(id); }

function button(label, action) {
  const node = el("button", label, { type: "button" });
  node.addEventListener("click", () => action().catch((err) => say(err.message, true)));
  return node;
}

// Refreshes can overlap (the page's own, a login, a click): each builds its rows and inbox
// off the page and only the newest one started puts them in, all at once.
let refreshes = 0;

async function refresh() {
  if (!token()) { say("Enter the operator token.", false); return; }
  const generation = ++refreshes;
  const { agents } = await api("GET", "/v1/agents");
  const body = document.createDocumentFragment();
  for (const entry of agents) {
    const row = el("tr", undefined, { "data-agent": entry.agent_id });
    row.append(el("td", entry.agent_id));
    if (entry.state !== "active") {
      row.append(el("td", "quarantined: " + entry.error, { class: "dead", colspan: "7" }));
      body.append(row);
      continue;
    }
    const s = entry.status;
    row.append(el("td", s.alive ? "alive" : "terminated: " + s.termination_reason,
      s.alive ? {} : { class: "dead" }));
    for (const value of [s.budget, s.spent, s.remaining, s.scar_score + " / " + s.scar_limit,
      s.actions_pending]) row.append(el("td", value));
    const cell = el("td");
    cell.append(button("Details", () => showAgent(entry.agent_id)));
    row.append(cell);
    body.append(row);
  }
  const inbox = await loadInbox();
  const sinks = await loadDeliveries();
  if (generation !== refreshes) return;
  $("agents").querySelector("tbody").replaceChildren(body);
  showInbox(inbox);
  $("deliveries").querySelector("tbody").replaceChildren(sinks);
  say("Updated " + new Date().toLocaleTimeString() + ".", false);
}

// The inbox: every agent's pending approvals, newest first, filtered by agent and tool (the
// server filters; the choices come from everything pending).
async function loadInbox() {
  const everything = (await api("GET", "/v1/pending")).pending;
  const agent = $("filter-agent").value;
  const tool = $("filter-tool").value;
  if (!agent && !tool) return { everything, shown: everything };
  const query = new URLSearchParams();
  if (agent) query.append("agent", agent);
  if (tool) query.append("tool", tool);
  return { everything, shown: (await api("GET", "/v1/pending?" + query)).pending };
}

function setChoices(select, values) {
  const chosen = select.value;
  const options = [el("option", "all", { value: "" })];
  for (const value of [...new Set(values)].sort()) options.push(el("option", value, { value }));
  if (chosen && !values.includes(chosen)) options.push(el("option", chosen, { value: chosen }));
  select.replaceChildren(...options);
  select.value = chosen;
}

function showInbox({ everything, shown }) {
  setChoices($("filter-agent"), everything.map((i) => i.agent_id));
  setChoices($("filter-tool"), everything.map((i) => i.action.tool));
  const queue = document.createDocumentFragment();
  for (const item of shown) queue.append(inboxItem(item));
  $("queue").replaceChildren(queue);
  fill($("queue-count"), shown.length + " of " + everything.length + " waiting, newest first");
}

function inboxItem(item) {
  const action = item.action;
  const agentId = item.agent_id;
  const box = el("div", undefined,
    { class: "item", "data-agent-id": agentId, "data-action": action.action_id });
  box.append(el("strong", agentId + " / " + action.action_id + ": " + action.tool));
  box.append(el("span", " cost " + action.cost + ", requested " + item.requested_at));
  box.append(el("p", whyText(action), { class: "why" }));
  const why = action.approval_reason;
  if (why && why.sources) box.append(el("p", "Labels: " + why.sources.join(", "), { class: "why" }));
  box.append(el("pre", JSON.stringify(action.input, null, 2), { class: "input" }));
  const path = agentPath(agentId) + "/actions/" + encodeURIComponent(action.action_id);
  const approver = () => $("approver").value || "operator";
  const note = el("input", undefined,
    { class: "note", "aria-label": "Note for " + action.action_id, placeholder: "note or reason" });
  box.append(note);
  box.append(button("Approve", async () => {
    const decision = await api("POST", path + "/approve",
      { approver: approver(), note: note.value || null });
    say(action.action_id + ": " + decision.decision, false);
    await refresh();
  }));
  box.append(button("Reject", () => reject(path, approver(), note.value, null)));
  box.append(button("Reject with scar", () => reject(path, approver(), note.value, "moderate")));
  return box;
}

// Delivery status per notification sink (the same numbers as guardkit status --notifications).
async function loadDeliveries() {
  const { sinks } = await api("GET", "/v1/notifications");
  const rows = document.createDocumentFragment();
  for (const sink of sinks) {
    const row = el("tr", undefined, { "data-sink": sink.sink });
    const error = sink.last_error ? sink.last_error + " (" +
      new Date(sink.last_error_at * 1000).toISOString() + ")" : "";
    for (const value of [sink.sink, sink.pending, sink.delivered, sink.skipped, sink.attempts,
      sink.failures, error, sink.last_delivered_at
        ? new Date(sink.last_delivered_at * 1000).toISOString() : ""]) {
      row.append(el("td", value));
    }
    rows.append(row);
  }
  if (!sinks.length) {
    const row = el("tr");
    row.append(el("td", "No sink has delivered from this store yet.", { colspan: "8" }));
    rows.append(row);
  }
  return rows;
}

// Why a human must decide this call: the rule or check that asked, else the tool's policy.
function whyText(action) {
  const why = action.approval_reason;
  if (why && why.code === "rule_requires_approval") {
    return "Asks a human because rule " + why.rule + " of the policy for " + why.tool +
      " matched: " + (why.message || "");
  }
  if (why) return "Asks a human because " + why.code + ": " + (why.message || "");
  return "Asks a human because the policy requires approval for " + action.tool;
}

// A signed link (#agent=..&action=..&link=..) decides one action without the operator token.
// The token came in the fragment, which no server sees; it leaves only in a POST body.
function linkFromHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  const link = params.get("link");
  if (!link || !params.get("agent") || !params.get("action")) return null;
  return { link, agent: params.get("agent"), action: params.get("action") };
}

async function linkPost(target, suffix, body) {
  const path = agentPath(target.agent) + "/actions/" + encodeURIComponent(target.action) +
    "/link" + suffix;
  const response = await fetch(path, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ link: target.link, ...body }),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(response.status + " " + data.code + ": " + data.error);
  return data;
}

async function showLink(target) {
  $("link-view").hidden = false;
  $("link-approve").disabled = true;  // until the server says the link may decide
  $("link-reject").disabled = true;
  const shown = await linkPost(target, "", {});
  const action = shown.action;
  const box = $("link-action");
  box.replaceChildren(
    el("strong", shown.agent_id + " / " + action.action_id + ": " + action.tool),
    el("span", " cost " + action.cost + ", " + action.status + ", link " + shown.link_id +
      " (" + shown.sink + ") valid until " + new Date(shown.expires_at * 1000).toISOString()),
    el("p", whyText(action), { class: "why" }),
    el("pre", JSON.stringify(action.input, null, 2), { class: "input" }));
  const pending = action.status === "pending_approval";
  $("link-approve").disabled = !pending;
  $("link-reject").disabled = !pending;
}

async function decideByLink(target, verb) {
  const name = $("link-name").value || null;
  const note = $("link-note").value || null;
  const body = verb === "approve" ? { name, note } : { name, reason: note };
  const decision = await linkPost(target, "/" + verb, body);
  say(decision.action_id + ": " + decision.decision, false);
  // Used: drop the token from the address bar and history.
  history.replaceState(null, "", location.pathname);
  $("link-approve").disabled = true;
  $("link-reject").disabled = true;
}

async function reject(path, approver, note, scar) {
  const reason = note || "rejected in the console";
  const decision = await api("POST", path + "/reject", { approver, reason, scar });
  say(decision.action_id + ": " + decision.decision, false);
  await refresh();
}

async function showAgent(agentId) {
  fill($("selected"), agentId);
  const detail = $("detail");
  detail.replaceChildren();
  detail.append(button("Verify", async () => {
    const result = await api("GET", agentPath(agentId) + "/verify");
    say(result.ok ? "Ledger verifies (" + result.records + " records)."
      : "Ledger FAILED: " + JSON.stringify(result.failure), !result.ok);
  }));
  detail.append(button("Terminate", async () => {
    const reason = prompt("Reason for terminating " + agentId);
    if (!reason) return;
    await api("POST", agentPath(agentId) + "/terminate", { reason, by: $("approver").value });
    await refresh();
  }));
  await showLog(agentId, 0);
}

// The ledger newest first, LOG_PAGE records a page; page 0 holds the head.
async function showLog(agentId, page) {
  const path = agentPath(agentId) + "/log";
  const head = (await api("GET", path + "?limit=1")).head.seq;
  const newest = head - page * LOG_PAGE;
  const after = Math.max(-1, newest - LOG_PAGE);
  const { records } = await api("GET", path + "?after=" + after + "&limit=" + (newest - after));
  records.reverse();
  fill($("log"), records.map((r) =>
    r.seq + " " + r.timestamp + " " + r.kind + " " + JSON.stringify(r.payload)).join("\n"));
  const pager = $("log-pages");
  pager.replaceChildren();
  const newer = button("Newer", () => showLog(agentId, page - 1));
  const older = button("Older", () => showLog(agentId, page + 1));
  newer.disabled = page === 0;
  older.disabled = after < 0;
  pager.append(newer, older, el("span", " records " + newest + " down to " + (after + 1) +
    " of " + (head + 1) + ", newest first", { id: "log-range" }));
}

document.addEventListener("DOMContentLoaded", () => {
  const target = linkFromHash();
  if (target) {
    $("link-approve").addEventListener("click",
      () => decideByLink(target, "approve").catch((err) => say(err.message, true)));
    $("link-reject").addEventListener("click",
      () => decideByLink(target, "reject").catch((err) => say(err.message, true)));
    showLink(target).catch((err) => say(err.message, true));
  }
  $("login").addEventListener("submit", (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, $("token").value);
    $("token").value = "";
    refresh().catch((err) => say(err.message, true));
  });
  $("logout").addEventListener("click", () => { sessionStorage.removeItem(KEY); say("Token forgotten.", false); });
  $("refresh").addEventListener("click", () => refresh().catch((err) => say(err.message, true)));
  for (const id of ["filter-agent", "filter-tool"]) {
    $(id).addEventListener("change", () => refresh().catch((err) => say(err.message, true)));
  }
  if (!target || token()) refresh().catch((err) => say(err.message, true));
});
