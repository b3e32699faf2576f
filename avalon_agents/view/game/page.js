// The replay page: renders the embedded game (#game-data) and filters it by seat. No network.
// main.js runs the page; calls.js, step.js and search.js add the LLM calls, stepping and search.
const DATA = JSON.parse(document.getElementById("game-data").textContent);
const SEATS = Object.keys(DATA.seats).map(Number).sort((a, b) => a - b);
const KNOWN_AS = {
  evil: "seen as evil", merlin_or_morgana: "Merlin or Morgana", evil_teammates: "evil teammate", nothing: "nothing",
};
const METHODS = { typed: "typed action", json: "JSON answer", rule: "rule parse", llm: "LLM extractor",
  fallback: "fallback" };

function el(tag, cls, ...children) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  for (const c of children) node.append(c instanceof Node ? c : String(c));
  return node;
}
// A dealt role, or a secret that tells one (a seat's own quest card, what the Lady showed): "hidden" until the
// roles are shown (page.css), and left out of search while hidden (search.js).
const role = (name) => el("span", "role", el("span", "v", name));
const player = (s) => `Player ${s}`;
const players = (list) => (list.length ? list.map(player).join(", ") : "nobody");
const words = (s) => String(s).replace(/_/g, " ");
const preview = (t) => (t.length > 90 ? t.slice(0, 90) + "…" : t);
const asText = (t) => (typeof t === "string" ? t : JSON.stringify(t, null, 2));

function describeEvent(e) {
  switch (e.type) {
    case "game_started": return [`Game starts: ${e.rules.name} rules, ${e.rules.players} players.`];
    case "role_assigned": return [`${player(e.seat)} is `, role(e.role), "."];
    case "night_info":
      return [`${player(e.seat)} at night: `, role(e.known_as === "nothing" ? "sees nothing"
        : `sees ${players(e.seats)} (${KNOWN_AS[e.known_as]})`), "."];
    case "leader_chosen":
      return [`Quest ${e.quest}, proposal ${e.attempt}: ${player(e.leader)} leads; a team of ${e.team_size}`
        + (e.fails_required > 1 ? ` (${e.fails_required} fails needed)` : "") + (e.final ? "; the last proposal." : ".")];
    case "speech": return [el("b", "", `${player(e.seat)}: `), e.text];
    case "team_proposed":
      return [`${player(e.leader)} ${e.assigned ? "is assigned" : "proposes"} the team ${players(e.team)}.`];
    case "vote_cast": return [`${player(e.seat)} votes ${e.approve ? "approve" : "reject"}.`];
    case "votes_revealed":
      return [`Team ${players(e.team)} ${e.approved ? "approved" : "rejected"} ${e.approve_count} to ${e.reject_count}`
        + (e.approvals.length || e.rejections.length
          ? `: approve ${players(e.approvals)}; reject ${players(e.rejections)}.` : ".")];
    case "quest_card": return [`${player(e.seat)} plays `, role(e.success ? "success" : "fail"), "."];
    case "quest_completed":
      return [`Quest ${e.quest} ${e.success ? "succeeds" : "fails"} (${e.fails} fail${e.fails === 1 ? "" : "s"}, team `
        + `${players(e.team)}). Score: good ${e.good_points}, evil ${e.evil_points}.`];
    case "lady_given": return [`${player(e.holder)} holds the Lady of the Lake.`];
    case "lady_examined": return [`${player(e.holder)} examines ${player(e.target)} with the Lady of the Lake.`];
    case "lady_result": return [`The Lady shows ${player(e.holder)} that ${player(e.target)} is `, role(e.loyalty), "."];
    case "assassination_declined": return [`${player(e.seat)} declines to name Merlin.`];
    case "assassination":
      return [`${player(e.assassin)} names ${player(e.target)} as Merlin: ${e.hit ? "a hit" : "a miss"}.`];
    case "game_ended": {
      const roles = SEATS.flatMap((s) => [s === SEATS[0] ? "" : ", ", `${s} `, role(e.roles[s])]);
      return [`${words(e.winner)} wins (${words(e.reason)}). Roles: `, ...roles, "."];
    }
    default: return [`${words(e.type)} ${JSON.stringify(e)}`];
  }
}

function describeRecord(r) {
  const who = el("span", "what", `${player(r.seat)} · ${r.type === "module" ? r.module : r.type}`
    + (r.quest ? ` · quest ${r.quest}` : ""));
  if (r.type === "module") {
    const head = el("summary", "", who, r.slot === r.module ? "" : `(${r.slot}) `,
      el("span", "preview", preview(asText(r.text))));
    return [el("details", "", head, el("p", "text", asText(r.text)))];
  }
  if (r.type === "extraction") {
    const problems = r.problems.length ? ` Problems: ${r.problems.join("; ")}.` : "";
    const action = JSON.stringify(r.action);  // a quest card tells its seat's side: hidden with the roles
    return [who, `${r.kind} read by `, el("span", `method ${r.method}`, METHODS[r.method] || r.method),
      " → ", r.kind === "quest" ? role(action) : action, `${r.valid ? "" : " (first answer not legal)"}`
      + (r.answers > 1 ? `, ${r.answers} answers` : "") + `.${problems}`];
  }
  if (r.type === "probe") {
    const beliefs = Object.entries(r.p_evil).sort((a, b) => a[0] - b[0]).map(([s, p]) =>
      el("span", "belief", ` ${s}:`, Object.assign(el("span", "bar"), { style: `width:${p * 3}em` }), p.toFixed(2)));
    return [who, r.valid ? `Merlin is ${r.merlin_guess ? player(r.merlin_guess) : "unknown"}; P(evil):` : "no valid answer",
      ...(r.valid ? beliefs : [])];
  }
  if (r.type === "llm_call") return [describeCall(r)];
  if (r.type === "speech_check") {
    const flags = ["echo", "reasked", "trimmed", "cut", "mid_sentence"].filter((f) => r[f]).map(words);
    return [who, `speech read against its prompt: ${r.words} words, at most ${r.copied} in a row copied from it`
      + (flags.length ? ` (${flags.join(", ")})` : "") + "."];
  }
  if (r.type === "seat_fault") {
    return [who, `${words(r.problem)}${r.kind ? ` (${r.kind})` : ""}${r.detail ? `: ${r.detail}` : ""}.`];
  }
  if (r.type === "judged") {
    return [who, `the ${words(r.judge)} judge's reading of the speech above: `, el("code", "", r.answer),
      r.valid ? "" : " (not a valid answer)"];
  }
  if (r.type === "annotation") {
    const about = r.about_seat ? ` about ${player(r.about_seat)}` : "";
    return [who, `a person's ${r.kind} label${about}: ${r.label}` + (r.text ? ` (“${r.text}”)` : "") + "."];
  }
  return [who, JSON.stringify(r)];
}

// An entry's id (a link to it is #e-N): its place in the timeline, from 1, whatever the seat filter shows.
const entryId = (i) => `e-${i + 1}`;

function renderItem(item, i) {
  const isEvent = item.item === "event";
  const node = el("li", `item ${item.item} ${isEvent ? "ev-" + item.type : "rec-" + item.type}`,
    Object.assign(el("a", "link"), { href: `#${entryId(i)}`, title: "link to this entry" }),
    ...(isEvent ? describeEvent(item) : describeRecord(item)));
  node.id = entryId(i);
  node.dataset.index = i;
  node.firstChild.dataset.n = i + 1; // the link shows #N (page.css), no text of the entry's
  if (isEvent && item.visible_to !== "all") node.classList.add("private");
  if (item.type === "quest_completed") node.classList.add(item.success ? "success" : "fail");
  if (item.type === "game_ended") node.classList.add(item.winner);
  node.dataset.type = item.type;
  node.dataset.visible = item.visible_to === "all" ? "all" : item.visible_to.join(",");
  if (!isEvent && item.seat != null) node.dataset.seat = item.seat;
  return node;
}

function visible(item, seat) {
  return seat === "all" || item.visible_to === "all" || item.visible_to.includes(Number(seat));
}

// What `seat` knows of each seat's role: its own, and what its night information says (nothing beyond).
function knowledge(seat) {
  const known = {};
  for (const item of DATA.items) {
    if (item.type === "role_assigned" && item.seat === seat) known[seat] = role(item.role);
    if (item.type === "night_info" && item.seat === seat) {
      for (const s of item.seats) known[s] = role(KNOWN_AS[item.known_as]);
    }
  }
  return known;
}

function renderSeats(seat) {
  const body = document.querySelector("#seats tbody");
  body.replaceChildren();
  const known = seat === "all" ? null : knowledge(Number(seat));
  for (const s of SEATS) {
    const cell = known ? (known[s] || el("span", "unknown", "unknown")) : role(DATA.seats[s].role);
    const row = el("tr", String(s) === seat ? "viewer" : "", el("td", "", player(s)), el("td", "", DATA.seats[s].kind),
      el("td", "", cell));
    row.dataset.seat = s;
    body.append(row);
  }
  document.querySelector("#seats thead th:last-child").textContent = known ? `role, as ${player(seat)} knows it` : "role";
}

function applyFilter() {
  const seat = document.getElementById("seat-filter").value;
  let shown = 0;
  DATA.items.forEach((item, i) => {
    const node = NODES[i];
    node.hidden = !visible(item, seat);
    if (!node.hidden) shown += 1;
  });
  renderSeats(seat);
  document.getElementById("shown").textContent = `${shown} of ${DATA.items.length} timeline entries shown`;
}

