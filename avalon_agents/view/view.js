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
const pct = (v) => (isNum(v) ? `${(100 * v).toFixed(1)}%` : "n/a");
const int = (v) => (isNum(v) ? Math.round(v).toLocaleString("en-US") : "n/a");
const usd = (v) => (v === null || v === undefined ? "no price" : `$${Number(v).toFixed(4)}`);
function interval(row) {
  if (!isNum(row.ci_low) || !isNum(row.ci_high)) return "";
  return `[${pct(row.ci_low)}, ${pct(row.ci_high)}]`;
}
function rate(row) {
  return `${pct(row.value)} ${interval(row)}`.trim();
}

// A table of `rows` with `columns` ([{key, label, show(row) -> text or node, num, sort(row) -> value}]), sortable by
// any column (its header is a button); `id` keeps its sort order across redraws.
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
    return el("td", { class: c.num ? "num" : null }, v === null || v === undefined ? "" : v);
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
    show: (r) => (isNum(r[k]) && !Number.isInteger(r[k]) ? r[k].toFixed(3) : r[k] === null ? "" :
      typeof r[k] === "object" ? JSON.stringify(r[k]) : r[k]) }));
}

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
      { key: "state", label: "state" },
      { key: "games_finished", label: "games", num: true, show: (r) => `${int(r.games_finished)} / ${int(r.games_planned)}` },
      { key: "health", label: "health", sort: (r) => r.health.problems.length, show: (r) => el("span",
        { class: r.health.problems.length ? "bad" : null, title: r.health.problems.join("; ") || "within the limits" },
        (r.health.problems.length ? "unhealthy: " : "") + healthText(r.health)) },
      { key: "models", label: "models", show: (r) => r.models.join(", ") },
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

  run() {
    const r = DATA.run;
    const out = [el("p", {}, `${r.kind} · ${r.state} · ${int(r.games_finished)} of ${int(r.games_planned)} games · `,
      el("span", { class: r.health.problems.length ? "bad" : "good" }, healthText(r.health)),
      ` · ${usd(r.usd)} · `, el("a", { href: DATA.links.calls }, "every LLM call"),
      DATA.links.compare ? " · " : null, DATA.links.compare ? el("a", { href: DATA.links.compare }, "compare its variants") : null)];
    if (r.health.problems.length) out.push(el("p", { class: "warn" }, `Not a result: ${r.health.problems.join("; ")}`));
    out.push(el("p", { class: "muted" }, DATA.provenance));
    if (DATA.headline.length) out.push(el("h2", {}, "Headline"), table("headline", headlineColumns(DATA.headline), DATA.headline));
    for (const [name, rows] of Object.entries(DATA.metrics)) {
      if (!rows.length) continue;
      out.push(el("h2", {}, name.replaceAll("_", " ")), table(`m-${name}`, columnsOf(rows), rows));
    }
    if (DATA.behaviour && DATA.behaviour.tables) {
      out.push(el("h2", {}, "Behaviour (judged)"), el("p", { class: "muted" },
        `From ${DATA.behaviour.file}, written ${DATA.behaviour.written} by avalon analyze --judge-model.`));
      for (const [name, rows] of Object.entries(DATA.behaviour.tables)) out.push(el("h3", {}, name), table(`b-${name}`, columnsOf(rows), rows));
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
    return out;
  },
};

function headlineColumns(rows) {
  const rates = Object.keys(rows[0]).filter((k) => /^(qer|fvr)_/.test(k));
  return [{ key: "variant", label: "variant" }, { key: "side", label: "side" }, { key: "agents", label: "agents" },
    { key: "win_rate", label: "win rate [95% CI]", num: true, show: (r) => `${pct(r.win_rate)} ${interval(r)}` },
    { key: "games", label: "games", num: true, show: (r) => int(r.games) },
    { key: "diff", label: "diff vs reference [95% CI]", num: true, show: (r) => (isNum(r.diff)
      ? `${pct(r.diff)} [${pct(r.diff_ci_low)}, ${pct(r.diff_ci_high)}] p=${r.diff_p_value.toFixed(2)}` : (r.vs_variant === r.variant ? "reference" : "")) },
    ...rates.map((k) => ({ key: k, label: k.replace("_", " ").replaceAll("_", " "), num: true, show: (r) => (isNum(r[k]) ? pct(r[k]) : "") }))];
}

function keepFocus(id) {
  const node = document.getElementById(id);
  if (node) { node.focus(); const n = node.value.length; node.setSelectionRange(n, n); }
}

function draw() {
  const app = document.getElementById("app");
  const drawer = PAGES[DATA.page];
  app.replaceChildren(...(drawer ? drawer() : [el("p", {}, `no drawing for page ${DATA.page}`)]));
  document.getElementById("home").setAttribute("href", DATA.links.index);
  const s = DATA.stamp;
  document.getElementById("stamp").textContent = `Made by ${s.framework} from ${s.folders.join(", ")} at ${s.made}.`;
}

let LAST = JSON.stringify(DATA);
async function poll() {
  try {
    const answer = await fetch(DATA.api, { cache: "no-store" });
    if (!answer.ok) throw new Error(`${answer.status}`);
    const text = await answer.text();
    document.getElementById("status").textContent = `live: checked ${new Date().toLocaleTimeString()}`;
    if (text !== LAST) {
      LAST = text;
      const focused = document.activeElement && document.activeElement.id;
      DATA = JSON.parse(text);
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
