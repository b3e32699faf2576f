// avalon view: draws the page its data names (index, run, compare, calls) from the JSON in #data; on the live
// site it asks the page's JSON address again every few seconds and draws again when the answer changed.
// Everything shown from the data goes in as text (textContent), never as markup.
let DATA = JSON.parse(document.getElementById("data").textContent);
const STATE = { sort: {}, filter: "", kind: "", picked: new Set(), offset: 0 };
const POLL_MS = 3000;

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children) if (c !== null && c !== undefined) node.append(c instanceof Node ? c : String(c));
  return node;
}

const isNum = (v) => typeof v === "number" && Number.isFinite(v);
// Numbers as formats.py shows them everywhere else: a share a whole percentage ("60% [31%, 83%]"), a difference of
// shares signed ("+20% [-15%, +51%]"), any other number `number`'s way ("88,700", "12.35", "0.049"), "p=0.087".
const half = (x) => { const r = Math.round(x); return Math.abs(x % 1) === 0.5 && r % 2 ? r - 1 : r; }; // Python's round
const pct = (v) => (isNum(v) ? `${half(100 * v) || 0}%` : "n/a");
const signed = (v) => (isNum(v) ? `${half(100 * v) > 0 ? "+" : half(100 * v) < 0 ? "" : "+"}${pct(v)}` : "n/a");
const number = (v) => (!isNum(v) ? "" : Number.isInteger(v) || Math.abs(v) >= 100
  ? Math.round(v).toLocaleString("en-US") : v.toFixed(Math.abs(v) >= 1 ? 2 : 3));
const pText = (p) => (!isNum(p) ? "" : p < 0.001 ? "p<0.001" : `p=${p.toFixed(3)}`);
const ALPHA = 0.05; // compare.py's: flagged where the interval excludes 0 and the test (where there is one) agrees
const flagged = (low, high, p) => isNum(low) && (low > 0 || high < 0) && (!isNum(p) || p < ALPHA);
const int = (v) => (isNum(v) ? Math.round(v).toLocaleString("en-US") : "n/a");
const usd = (v) => (!isNum(v) ? "no price" : v >= 0.01 || v === 0
  ? `$${v.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 })}` : `$${v.toFixed(4)}`); // formats.dollars
function interval(row) {
  if (!isNum(row.ci_low) || !isNum(row.ci_high)) return "";
  return `[${pct(row.ci_low)}, ${pct(row.ci_high)}]`;
}
function rate(row) {
  return `${pct(row.value)} ${interval(row)}`.trim();
}

// A table of `rows` with `columns` ([{key, label, show(row) -> text or node, num, sort(row) -> value}]), sortable by
// any column (its header is a button); `id` keeps its sort order across redraws. Each cell carries its column's
// label: on a phone each row is a card of "label value" lines (view.css), every column on the screen.
function table(id, columns, rows, caption) {
  const sort = STATE.sort[id];
  let shown = rows.slice();
  if (sort) {
    const col = columns.find((c) => c.key === sort.key);
    const value = (r) => (col.sort ? col.sort(r) : r[col.key]);
    shown.sort((a, b) => {
      const x = value(a), y = value(b);
      const order = x === y ? 0 : x === null || x === undefined ? 1 : y === null || y === undefined ? -1 : x < y ? -1 : 1;
      return sort.desc ? -order : order;
    });
  }
  const head = el("tr", {}, ...columns.map((c) => {
    const state = sort && sort.key === c.key ? (sort.desc ? "descending" : "ascending") : "none";
    return el("th", { scope: "col", class: c.num ? "num" : null, "aria-sort": state },
      el("button", { type: "button", onclick: () => {
        const now = STATE.sort[id];
        STATE.sort[id] = { key: c.key, desc: now && now.key === c.key ? !now.desc : false };
        draw();
      } }, c.label));
  }));
  const body = shown.map((r) => el("tr", {}, ...columns.map((c) => {
    const v = c.show ? c.show(r) : r[c.key];
    return el("td", { class: c.num ? "num" : null, "data-label": c.label }, v === null || v === undefined ? "" : v);
  })));
  return el("div", { class: "scroll" }, el("table", { id },
    caption ? el("caption", { class: "muted" }, caption) : null, el("thead", {}, head), el("tbody", {}, ...body)));
}

// The columns of any table of rows: a metric's rows show value, interval and n together.
function columnsOf(rows) {
  const keys = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  if (keys.includes("value") && keys.includes("ci_low")) {
    const groups = keys.filter((k) => !["value", "ci_low", "ci_high", "n", "games", "few_games", "ci_method"].includes(k));
    return [...groups.map((k) => ({ key: k, label: k })),
      { key: "value", label: "value [95% CI]", show: rate, num: true },
      { key: "n", label: "n", show: (r) => int(r.n), num: true },
      { key: "games", label: "games", show: (r) => int(r.games), num: true }];
  }
  return keys.map((k) => ({ key: k, label: k, num: rows.some((r) => isNum(r[k])),
    show: (r) => (isNum(r[k]) ? number(r[k]) : r[k] === null ? "" :
      typeof r[k] === "object" ? JSON.stringify(r[k]) : r[k]) }));
}

// A list of names in a table's cell: up to SHORT_LIST of them, else their count and the first two (the run's page, and
// the cell's title, hold them all): a tournament's entrants ran to 275 characters.
const SHORT_LIST = 3;
const shortList = (names) => (names.length <= SHORT_LIST ? names.join(", ")
  : `${names.length}: ${names.slice(0, 2).join(", ")}, …`);

function healthText(h) {
  const vrr = h.valid_response_rate === null ? "n/a" : pct(h.valid_response_rate);
  return `${int(h.llm_calls)} calls, ${int(h.failed_calls)} failed; ${int(h.fallbacks)}/${int(h.decisions)} fallbacks; ` +
    `valid ${vrr}; seat faults ${int(h.seat_faults)}`;
}

const PAGES = {
  index() {
    const kinds = [...new Set(DATA.runs.map((r) => r.kind))].sort();
    const text = (r) => `${r.id} ${r.name} ${r.kind} ${r.state} ${r.models.join(" ")} ${r.commit || ""}`.toLowerCase();
    const rows = DATA.runs.filter((r) => (!STATE.filter || text(r).includes(STATE.filter.toLowerCase()))
      && (!STATE.kind || r.kind === STATE.kind));
    const filter = el("input", { type: "search", id: "filter", value: STATE.filter, placeholder: "name, model, commit...",
      oninput: (e) => { STATE.filter = e.target.value; draw(); keepFocus("filter"); } });
    const kind = el("select", { id: "kind", onchange: (e) => { STATE.kind = e.target.value; draw(); } },
      el("option", { value: "" }, "every kind"), ...kinds.map((k) => el("option", { value: k, selected: STATE.kind === k }, k)));
    const compare = DATA.compare === null ? null : el("button", { type: "button", id: "compare", disabled: STATE.picked.size < 2,
      onclick: () => { location.href = DATA.compare.replace("runs=", "runs=" + encodeURIComponent([...STATE.picked].join(","))); } },
      `Compare ${STATE.picked.size} selected`);
    const columns = [
      ...(DATA.compare === null ? [] : [{ key: "pick", label: "pick", sort: (r) => STATE.picked.has(r.id), show: (r) => el("input", {
        type: "checkbox", "aria-label": `pick ${r.id} to compare`, checked: STATE.picked.has(r.id),
        onchange: (e) => { if (e.target.checked) STATE.picked.add(r.id); else STATE.picked.delete(r.id); draw(); } }) }]),
      { key: "id", label: "run", show: (r) => el("a", { href: r.link }, r.id) },
      { key: "kind", label: "kind" },
      { key: "state", label: "state", show: (r) => (r.unreadable || []).length
        ? el("span", { class: "bad", title: r.unreadable.join("; ") }, `${r.state}: ${r.unreadable.join("; ")}`) : r.state },
      { key: "games_finished", label: "games", num: true, show: (r) => `${int(r.games_finished)} / ${int(r.games_planned)}` },
      { key: "health", label: "health", sort: (r) => r.health.problems.length, show: (r) => el("span",
        { class: r.health.problems.length ? "bad" : null, title: r.health.problems.join("; ") || "within the limits" },
        (r.health.problems.length ? "unhealthy: " : "") + healthText(r.health)) },
      { key: "models", label: "models", sort: (r) => r.models.join(", "),
        show: (r) => el("span", { title: r.models.join(", ") }, shortList(r.models)) },
      { key: "tokens", label: "tokens in/out", num: true, sort: (r) => r.input_tokens + r.output_tokens,
        show: (r) => `${int(r.input_tokens)} / ${int(r.output_tokens)}` },
      { key: "usd", label: "dollars", num: true, show: (r) => usd(r.usd) },
      { key: "started", label: "started" },
      { key: "updated", label: "updated" },
      { key: "commit", label: "commit", show: (r) => (r.commit || "").slice(0, 12) },
    ];
    return [el("div", { class: "controls" }, el("label", {}, "Filter ", filter), el("label", {}, "Kind ", kind), compare,
      el("span", { class: "muted" }, `${rows.length} of ${DATA.runs.length} runs`)),
      table("runs", columns, rows),
      ...(DATA.comparisons || []).length ? [el("h2", {}, "Comparisons"), el("ul", {}, ...DATA.comparisons.map((c) =>
        el("li", {}, el("a", { href: c.link }, c.runs.join(" vs ")))))] : []];
  },

  calls() {
    return drawCalls();
  },

  compare() {
    return drawCompare();
  },

  run() {
    const r = DATA.run;
    const out = [el("p", {}, `${r.kind} · ${r.state} · ${int(r.games_finished)} of ${int(r.games_planned)} games · `,
      el("span", { class: r.health.problems.length ? "bad" : "good" }, healthText(r.health)),
      ` · ${usd(r.usd)} · `, el("a", { href: DATA.links.calls }, "every LLM call"),
      DATA.links.compare ? " · " : null, DATA.links.compare ? el("a", { href: DATA.links.compare }, "compare its variants") : null)];
    if (r.health.problems.length) out.push(el("p", { class: "warn" }, `Not a result: ${r.health.problems.join("; ")}`));
    if (DATA.computing) out.push(el("p", { class: "warn" }, `The metrics below count ${int(DATA.metrics_of)} of the run's `
      + `${int(r.games_finished)} finished games; the newer ones are being counted (the page follows when done).`));
    if (r.models.length > SHORT_LIST) out.push(el("p", {}, `${r.models.length} models: ${r.models.join(", ")}`));
    out.push(el("p", { class: "muted" }, DATA.provenance));
    for (const t of DATA.result || []) out.push(el("h2", {}, t.title), el("p", { class: "muted" }, `From ${t.file}` +
      (t.total > t.rows.length ? ` (its first ${int(t.rows.length)} of ${int(t.total)} rows).` : ".")),
      table(`r-${t.file.replace(/[^\w-]/g, "-")}`, columnsOf(t.rows), t.rows));
    if (DATA.headline.length) out.push(el("h2", {}, "Headline"), table("headline", headlineColumns(DATA.headline), DATA.headline));
    for (const [name, rows] of Object.entries(DATA.metrics)) {
      if (!rows.length) continue;
      out.push(el("h2", {}, name.replaceAll("_", " ")), table(`m-${name}`, columnsOf(rows), rows));
    }
    if (DATA.behaviour && DATA.behaviour.tables) {
      out.push(el("h2", {}, "Behaviour (judged)"), el("p", { class: "muted" },
        `From ${DATA.behaviour.file}, written ${DATA.behaviour.written} by avalon analyze --judge-model `
        + `${DATA.behaviour.model || "(its model not recorded)"}.`));
      for (const [name, rows] of Object.entries(DATA.behaviour.tables)) out.push(el("h3", {}, `${name} · judge `
        + `${(DATA.behaviour.judges || {})[name] || "unknown"}, model ${DATA.behaviour.model || "not recorded"}`),
        table(`b-${name}`, columnsOf(rows), rows));
    } else {
      out.push(el("h2", {}, "Behaviour (judged)"), el("p", { class: "muted" }, "Not judged: run avalon analyze --judge-model MODEL on this run."));
    }
    if (DATA.figures.length) out.push(el("h2", {}, "Figures"), ...DATA.figures.map((f) =>
      el("figure", {}, el("img", { src: f.src, alt: `${f.title} (figure)` }), el("figcaption", {}, f.title))));
    if (DATA.health.length) out.push(el("h2", {}, "Health"), table("health", columnsOf(DATA.health), DATA.health));
    if (DATA.cost.length) out.push(el("h2", {}, "Cost"), table("cost", columnsOf(DATA.cost), DATA.cost));
    out.push(el("h2", {}, `Games (${DATA.games.length})`), table("games", [
      { key: "game", label: "game", show: (g) => el("a", { href: g.link }, g.game) },
      { key: "state", label: "state" }, { key: "winner", label: "winner" }, { key: "reason", label: "how" }], DATA.games));
    if (DATA.config) out.push(el("h2", {}, `Config (${DATA.config.file})`), el("pre", {}, JSON.stringify(DATA.config.record, null, 1)));
    const environment = Object.entries(DATA.environment || {}).map(([key, value]) => ({ key, value }));
    out.push(el("h2", {}, "Environment"), environment.length ? table("environment", [{ key: "key", label: "what" },
      { key: "value", label: "value" }], environment) : el("p", { class: "muted" }, "Not recorded (a run written before run.json)."));
    if ((DATA.plugins || []).length) out.push(el("h2", {}, "Plugins"), table("plugins", [{ key: "key", label: "plugin" },
      { key: "sha256", label: "sha256 (first 12)" }], DATA.plugins));
    return out;
  },
};

// The Calls page: every LLM call of a run, filtered and paged. Live, each change of a filter asks the page's JSON
// address again with the filters (the server filters and pages); exported, the page holds the run's first calls and
// filters and pages those itself. A call's prompt and reply are drawn, as text, when its row is first opened.
const CALL_FILTERS = ["q", "seat", "step", "module", "model", "game", "stage", "flag", "sort"];
const FLAG_NAMES = { reask: "re-asks", fallback: "fallbacks", retried: "retried", failed: "failed" };
const SORT_NAMES = { tokens: "most tokens", latency: "slowest", usd: "most dollars" };
let CALLS_TIMER = null;

function callFilters() {
  if (!STATE.calls) {
    STATE.calls = Object.fromEntries(CALL_FILTERS.map((k) => [k, DATA.filters[k] === null || DATA.filters[k] === undefined
      ? "" : String(DATA.filters[k])]));
    STATE.offset = DATA.offset || 0;
    STATE.opened = new Set();
  }
  return STATE.calls;
}

// Live: the page's JSON address with the filters and the offset; the page's own address follows it.
function askCalls(delay) {
  clearTimeout(CALLS_TIMER);
  CALLS_TIMER = setTimeout(() => {
    const address = new URL(DATA.api, location.href);
    const params = { ...STATE.calls, offset: STATE.offset ? String(STATE.offset) : "" };
    for (const [k, v] of Object.entries(params)) {
      if (v === "") address.searchParams.delete(k); else address.searchParams.set(k, v);
    }
    DATA.api = address.pathname + address.search;
    try { history.replaceState(null, "", location.pathname + address.search); } catch { /* a file: page */ }
    poll();
  }, delay);
}

function setCallFilter(key, value, id) {
  callFilters()[key] = value;
  STATE.offset = 0;
  if (DATA.api) askCalls(key === "q" || key === "step" || key === "game" ? 300 : 0);
  else { draw(); keepFocus(id); }
}

// Exported: the held calls the filters keep, in the order asked.
function heldCalls() {
  const f = callFilters();
  const q = f.q.trim().toLowerCase();
  const text = (c) => [...c.messages.map((m) => DATA.texts[m.text]), c.reply || "", c.error || ""].join("\n").toLowerCase();
  const keep = DATA.calls.filter((c) => (f.seat === "" || c.seat === Number(f.seat)) && (f.step === "" || c.step === Number(f.step))
    && ["module", "model", "game", "stage"].every((k) => f[k] === "" || c[k] === f[k])
    && (f.flag === "" || (f.flag === "reask" || f.flag === "fallback" ? c[f.flag] : c.outcome === f.flag))
    && (q === "" || text(c).includes(q)));
  const key = { tokens: (c) => c.input_tokens + c.output_tokens, latency: (c) => c.latency_s, usd: (c) => (c.usd === null ? -1 : c.usd) }[f.sort];
  return key ? keep.slice().sort((a, b) => key(b) - key(a)) : keep;
}

function callText(c) {
  const part = (who, text) => el("div", { class: "message" }, el("div", { class: "muted" }, who), el("pre", {}, text));
  return [...c.messages.map((m) => part(m.role, DATA.texts[m.text])), part("reply", c.reply === null ? "(no reply)" : c.reply),
    c.error ? el("p", { class: "bad" }, `error: ${c.error}`) : null];
}

function callDetails(c) {
  const opened = STATE.opened.has(c.n);
  const details = el("details", { open: opened }, el("summary", {}, `${c.messages.length} messages and the reply`),
    ...(opened ? callText(c) : []));
  details.addEventListener("toggle", () => {
    if (details.open) {
      STATE.opened.add(c.n);
      if (details.children.length === 1) details.append(...callText(c).filter(Boolean));
    } else STATE.opened.delete(c.n);
  });
  return details;
}

function callDecision(c) {
  if (!c.decision) return "";
  const how = [c.method, c.answers > 1 ? `${c.answers} answers` : "", c.valid === false ? "first answer not legal" : ""].filter(Boolean);
  const marks = [c.reask ? "re-ask" : "", c.fallback ? "fallback" : ""].filter(Boolean);
  return el("span", {}, `${c.decision}${how.length ? ` (${how.join(", ")})` : ""}`,
    marks.length ? el("span", { class: "bad" }, ` ${marks.join(", ")}`) : null);
}

function drawCalls() {
  const f = callFilters();
  const o = DATA.options;
  const held = !DATA.api;
  const found = held ? heldCalls() : DATA.calls;
  const total = held ? found.length : DATA.total;
  const limit = held ? 100 : DATA.limit;
  const offset = Math.min(STATE.offset, Math.max(0, total - 1));
  const shown = held ? found.slice(offset, offset + limit) : found;
  const choose = (key, label, values, names) => el("label", {}, `${label} `, el("select", { id: `calls-${key}`,
    onchange: (e) => setCallFilter(key, e.target.value, `calls-${key}`) },
  el("option", { value: "" }, key === "sort" ? "run order" : "any"),
  ...values.map((v) => el("option", { value: String(v), selected: f[key] === String(v) }, names ? names[v] || v : v))));
  const typed = (key, label, attrs) => el("label", {}, `${label} `, el("input", { id: `calls-${key}`, value: f[key], ...attrs,
    oninput: (e) => setCallFilter(key, e.target.value, `calls-${key}`) }));
  const controls = el("div", { class: "controls" },
    typed("q", "Text", { type: "search", placeholder: "in prompts and replies" }),
    choose("seat", "Seat", o.seats),
    typed("step", "Step", { type: "number", min: 0, step: 1, max: o.steps.length ? o.steps[1] : null, placeholder: "any" }),
    choose("module", "Module", o.modules), choose("model", "Model", o.models),
    o.games.length <= 200 ? choose("game", "Game", o.games) : typed("game", "Game", { type: "search", list: "calls-games" }),
    choose("stage", "Stage", o.stages), choose("flag", "Only", o.flags, FLAG_NAMES), choose("sort", "Order", o.sorts, SORT_NAMES));
  const games = o.games.length > 200 ? el("datalist", { id: "calls-games" }, ...o.games.slice(0, 1000).map((g) => el("option", { value: g }))) : null;
  const move = (to) => {
    STATE.offset = Math.max(0, to);
    if (held) draw(); else askCalls(0);
  };
  const pager = (where) => el("nav", { class: "controls pager", "aria-label": `pages of calls (${where})` },
    el("button", { type: "button", id: `calls-prev-${where}`, disabled: offset === 0, onclick: () => move(offset - limit) }, "Previous"),
    el("span", {}, total ? `calls ${int(offset + 1)}–${int(Math.min(offset + shown.length, total))} of ${int(total)}` : "no call matches"),
    el("button", { type: "button", id: `calls-next-${where}`, disabled: offset + limit >= total, onclick: () => move(offset + limit) }, "Next"));
  const sums = held ? null : DATA.sums;
  const out = [el("p", {}, el("a", { href: DATA.links.run }, `run ${DATA.run}`), ` · ${int(DATA.run_total)} LLM calls`
    + (DATA.run_judge_calls ? ` (${int(DATA.run_judge_calls)} of them judges' calls: stage judge)` : "")
    + (sums ? ` · these ${int(total)}: ${int(sums.input_tokens)} in / ${int(sums.output_tokens)} out tokens, `
      + `${number(sums.latency_s)} s, ${usd(sums.usd)}` + (sums.unpriced ? ` (${int(sums.unpriced)} calls without a price)` : "") : ""))];
  if (o.unpriced_models.length) out.push(el("p", { class: "muted" }, `No price for ${o.unpriced_models.join(", ")}: give one with prices: or --prices FILE.`));
  if (held) {
    out.push(el("p", { class: "warn" }, `This exported page holds the run's first ${int(DATA.calls.length)} of its ${int(DATA.run_total)} calls `
      + `(an export holds at most ${int(DATA.export_limit)} a run); its filters search those. avalon view serves them all.`));
  }
  const columns = [
    { key: "n", label: "#", num: true },
    { key: "game", label: "game", show: (c) => (c.link ? el("a", { href: c.link, title: "this call in its game's replay" },
      `${c.game}${c.entry ? ` #${c.entry}` : ""}`) : c.game || (c.source === "analysis" ? "analysis" : "")) },
    { key: "seat", label: "seat", num: true },
    { key: "step", label: "step", num: true },
    { key: "quest", label: "quest, proposal", num: true, show: (c) => (c.quest === null ? "" : c.attempt ? `${c.quest}, ${c.attempt}` : `${c.quest}`) },
    { key: "module", label: "module", show: (c) => `${c.module}${c.stage !== "module" ? ` (${c.stage})` : ""}${c.request ? ` for ${c.request}` : ""}` },
    { key: "model", label: "model" },
    { key: "tokens", label: "tokens in / out", num: true, sort: (c) => c.input_tokens + c.output_tokens,
      show: (c) => `${int(c.input_tokens)} / ${int(c.output_tokens)}` + (c.cached_tokens ? ` (${int(c.cached_tokens)} cached)` : "") },
    { key: "latency_s", label: "seconds", num: true, show: (c) => number(c.latency_s) },
    { key: "usd", label: "dollars", num: true, show: (c) => usd(c.usd) },
    { key: "outcome", label: "outcome", show: (c) => el("span", { class: c.outcome === "ok" ? null : "bad" },
      c.outcome + (c.attempts > 1 ? ` (${c.attempts} attempts)` : "") + (c.replayed ? " replayed" : "")) },
    { key: "decision", label: "decision", show: callDecision },
    { key: "text", label: "prompt and reply", sort: (c) => c.n, show: callDetails },
  ];
  return [...out, controls, games, pager("top"), table("calls", columns, shown), total > limit ? pager("bottom") : null].filter(Boolean);
}

// The Compare page: sides (runs, or a run's variants) side by side, each difference from the first side with its
// interval; a difference is flagged by compare.py's one rule (DATA.rule), once (a repeat names where it was shown).
// "Only flagged" keeps the rows with one.

function differenceText(d, rates) {
  if (!d) return "";
  const shown = rates ? signed : (v) => `${v > 0 ? "+" : ""}${number(v)}`;
  const text = el("span", { class: "nowrap" }, shown(d.diff) + (isNum(d.ci_low) ? ` [${shown(d.ci_low)}, ${shown(d.ci_high)}]` : ""));
  const more = d.same_as ? [`same games as ${d.same_as}`] : [pText(d.p_value), isNum(d.p_adjusted) ? `Holm ${pText(d.p_adjusted)}` : null,
    d.flagged ? "not 0" : null, d.agree === false ? "interval and test disagree: not flagged" : null].filter(Boolean);
  return el("span", { class: d.flagged ? "flag" : d.same_as ? "muted" : null, title: d.method ? `interval: ${d.method}` : "no interval" },
    text, more.length ? el("br") : null, more.length ? el("small", {}, more.join(", ")) : null);
}

// A side's name in a header: its variant's when every side is a variant of one run.
const sideName = (s) => (DATA.sides.every((t) => t.run === DATA.sides[0].run) ? s.variant : s.label);

function compareColumns(groups, rates) {
  const value = (v) => (!rates ? number(v) : v ? el("span", {}, el("span", { class: "nowrap" }, rate(v)), el("br"),
    el("small", { class: "muted" }, `n=${int(v.n)}` + (v.few_games ? ", few games" : ""))) : "");
  return [...groups.map((g) => ({ key: `k-${g}`, label: g, show: (r) => r.key[g], sort: (r) => r.key[g] })),
    ...DATA.sides.map((s, i) => ({ key: `v-${i}`, label: sideName(s), num: true, show: (r) => value(r.values[i]),
      sort: (r) => (rates ? r.values[i] && r.values[i].value : r.values[i]) })),
    ...DATA.sides.slice(1).map((s, j) => ({ key: `d-${j + 1}`, label: `${sideName(s)} − ${sideName(DATA.sides[0])}` + (rates ? " [95% CI]" : ""),
      num: true, show: (r) => differenceText(r.differences[j + 1], rates),
      sort: (r) => r.differences[j + 1] && r.differences[j + 1].diff }))];
}

function drawCompare() {
  const flagged = (rows) => (STATE.flagged ? rows.filter((r) => r.differences.some((d) => d && d.flagged)) : rows);
  const out = DATA.warnings.map((w) => el("p", { class: "warn", role: "note" }, w));
  const m = DATA.multiple;
  out.push(el("p", {}, `Each difference is a side minus the reference, ${DATA.reference}; ${DATA.rule} `
    + "Win rates: Newcombe's interval and Fisher's p; other rates: resampling each side's games."),
  el("p", { role: "note" }, `${int(m.differences)} distinct differences on this page, ${int(m.flagged)} flagged; at 95% about `
    + `${number(m.by_chance)} would exclude zero by chance alone. Holm's adjusted p is beside each test's.`));
  out.push(table("sides", [
    { key: "label", label: "side", show: (s) => el("a", { href: s.link }, s.label) },
    { key: "games", label: "games", num: true, show: (s) => int(s.games) },
    { key: "good_agents", label: "good", show: (s) => s.good_agents.join(", ") },
    { key: "evil_agents", label: "evil", show: (s) => s.evil_agents.join(", ") },
    { key: "players", label: "players", show: (s) => s.players.join(", ") },
    { key: "roles", label: "roles", show: (s) => s.roles.join(", ") },
    { key: "models", label: "models", show: (s) => s.models.join(", ") },
    { key: "rules", label: "rules", show: (s) => s.rules.join(", ") },
    { key: "plugins", label: "plugins", show: (s) => s.plugins.join(", ") },
    { key: "commit", label: "commit", show: (s) => (s.commit || "unknown").slice(0, 12) }], DATA.sides));
  out.push(el("div", { class: "controls" }, el("label", {}, el("input", { type: "checkbox", id: "flagged", checked: !!STATE.flagged,
    onchange: (e) => { STATE.flagged = e.target.checked; draw(); keepFocus("flagged"); } }), " only rows with a flagged difference")));
  out.push(el("h2", {}, "Win rate per side"), table("c-headline", compareColumns(["side"], true), flagged(DATA.headline)));
  for (const [name, m] of Object.entries(DATA.metrics)) {
    const rows = flagged(m.rows);
    if (!rows.length || name === "win_rate") continue; // the win rate per side, drawn above
    out.push(el("h2", {}, name.replaceAll("_", " ")), table(`c-${name}`, compareColumns(m.groups, m.kind === "rate"), rows));
  }
  return out;
}

function headlineColumns(rows) {
  const rates = Object.keys(rows[0]).filter((k) => /^(qer|fvr)_/.test(k));
  return [{ key: "variant", label: "variant" }, { key: "side", label: "side" }, { key: "agents", label: "agents" },
    { key: "win_rate", label: "win rate [95% CI]", num: true, show: (r) => `${pct(r.win_rate)} ${interval(r)}` },
    { key: "games", label: "games", num: true, show: (r) => int(r.games) },
    { key: "diff", label: "diff vs reference [95% CI]", num: true, show: (r) => (isNum(r.diff)
      ? el("span", { class: flagged(r.diff_ci_low, r.diff_ci_high, r.diff_p_value) ? "flag" : null },
        `${signed(r.diff)} [${signed(r.diff_ci_low)}, ${signed(r.diff_ci_high)}] ${pText(r.diff_p_value)}`,
        flagged(r.diff_ci_low, r.diff_ci_high, r.diff_p_value) ? " not 0" : "")
      : (r.vs_variant === r.variant ? "reference" : "")) },
    ...rates.map((k) => ({ key: k, label: k.replace("_", " ").replaceAll("_", " "), num: true, show: (r) => (isNum(r[k]) ? pct(r[k]) : "") }))];
}

function keepFocus(id) {
  const node = document.getElementById(id);
  if (!node) return;
  node.focus();
  try { const n = node.value.length; node.setSelectionRange(n, n); } catch { /* a select or a number box: no caret */ }
}

function draw() {
  const app = document.getElementById("app");
  const drawer = PAGES[DATA.page];
  app.replaceChildren(...(drawer ? drawer() : [el("p", {}, `no drawing for page ${DATA.page}`)]));
  document.getElementById("home").setAttribute("href", DATA.links.index);
  const s = DATA.stamp;
  document.getElementById("stamp").textContent = `Made by ${s.framework} from ${s.folders.join(", ")} at ${s.made}.`;
}

// What a page shows, without the time it was made at: drawn again only when this changed.
const shown = (data) => JSON.stringify({ ...data, stamp: null });
let LAST = shown(DATA);
async function poll() {
  try {
    const asked = DATA.api;
    const answer = await fetch(asked, { cache: "no-store" });
    if (!answer.ok) throw new Error(`${answer.status}`);
    const data = await answer.json();
    if (DATA.api !== asked) return; // the page asks another address since (a filter changed): this answer is old
    document.getElementById("status").textContent = `live: checked ${new Date().toLocaleTimeString()}`;
    if (shown(data) !== LAST) {
      LAST = shown(data);
      const focused = document.activeElement && document.activeElement.id;
      DATA = data;
      draw();
      if (focused) keepFocus(focused);
    }
  } catch (e) {
    document.getElementById("status").textContent = `live: the viewer did not answer (${e.message}); trying again`;
  }
}

if (typeof PAGES_MORE !== "undefined") Object.assign(PAGES, PAGES_MORE);
draw();
if (DATA.api && location.protocol !== "file:") {
  document.getElementById("status").textContent = "live";
  setInterval(poll, POLL_MS);
}
