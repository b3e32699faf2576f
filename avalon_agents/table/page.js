// The web table's page: a person's seat (/seat/N?token=...) or the spectator's view (/watch?token=...).
// Everything shown comes from the JSON API (a seat's state holds only what the seat may know; the spectator's only
// public events) and is set as text, never as HTML.
const WATCH = location.pathname.startsWith("/watch");
const SEAT = WATCH ? null : Number(location.pathname.split("/").pop());
const TOKEN = new URLSearchParams(location.search).get("token") || "";
const API = (WATCH ? "/api/watch" : `/api/seat/${SEAT}`) + "?token=" + encodeURIComponent(TOKEN);
const $ = (id) => document.getElementById(id);
let last = "", shownLines = 0, openId = null, sending = false, game = 0, knowledge = null, title = "Avalon table";

function el(tag, text, cls) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (cls) node.className = cls;
  return node;
}
const player = (n) => `Player ${n}`;
const players = (seats) => (seats && seats.length ? seats.map(player).join(", ") : "nobody");

// ------------------------------------------------------------------ what the events the page was given tell

/** The game so far from the events the state holds: the proposals with their votes, the quests' results, the
 * seat's night information and what the Lady of the Lake showed it, who holds the Lady. */
function readEvents(events) {
  const k = { night: null, lady: [], proposals: [], quests: {}, holder: null, assassination: null };
  let current = null;
  for (const e of events) {
    if (e.type === "night_info" && e.seat === SEAT) k.night = e;
    else if (e.type === "leader_chosen") {
      current = { quest: e.quest, attempt: e.attempt, leader: e.leader, size: e.team_size, final: e.final,
                  team: null, votes: null, own: null };
      k.proposals.push(current);
    } else if (e.type === "team_proposed" && current) { current.team = e.team; current.assigned = e.assigned; }
    else if (e.type === "vote_cast" && current) current.own = e.approve;
    else if (e.type === "votes_revealed" && current) current.votes = e;
    else if (e.type === "quest_completed") k.quests[e.quest] = e;
    else if (e.type === "lady_given") k.holder = e.holder;
    else if (e.type === "lady_examined") k.holder = e.target;
    else if (e.type === "lady_result") k.lady.push(e);
    else if (e.type === "assassination") k.assassination = e;
  }
  return k;
}

const NIGHT = {  // how each kind of night information marks the seats it names: [css class, short, long]
  evil: ["evil", "evil", "seen as evil at night"],
  evil_teammates: ["mate", "teammate", "your evil teammate"],
  merlin_or_morgana: ["candidate", "Merlin?", "Merlin or Morgana"],
};
/** The panel's line for the seat's night information. */
function nightLine(night) {
  if (!NIGHT[night.known_as] || !night.seats.length) return "You saw nothing at night.";
  const seats = players(night.seats);
  if (night.known_as === "evil") return `Evil, as the night showed you (not which role): ${seats}.`;
  if (night.known_as === "evil_teammates") return `Your evil teammates (not which role): ${seats}.`;
  return night.seats.length > 1 ? `Merlin and Morgana, one each (you cannot tell which): ${seats}.`
    : `Merlin or Morgana, whichever is in this game: ${seats}.`;
}

/** What this seat privately knows about seat n: [[css class, short label, long label], ...]. */
function marks(n) {
  const out = [];
  const night = knowledge && knowledge.night;
  if (night && NIGHT[night.known_as] && night.seats.includes(n)) out.push(NIGHT[night.known_as]);
  for (const r of (knowledge ? knowledge.lady : [])) {
    if (r.target === n) {
      out.push([r.loyalty, `${r.loyalty} (Lady)`, `${r.loyalty}, as the Lady of the Lake showed you`]);
    }
  }
  return out;
}

// ------------------------------------------------------------------ drawing

function renderSeats(s) {
  const waiting = new Set((s.waiting || []).map((w) => w.seat));
  const open = knowledge.proposals[knowledge.proposals.length - 1];
  const live = open && !knowledge.quests[open.quest] && !s.over ? open : null;
  const items = [];
  for (let n = 1; n <= s.players; n++) {
    const node = el("li");
    node.dataset.seat = n;
    const angle = (2 * Math.PI * (n - 1)) / s.players;
    node.style.left = `${50 + 41 * Math.sin(angle)}%`;
    node.style.top = `${50 - 41 * Math.cos(angle)}%`;
    node.append(el("span", player(n) + (n === SEAT ? " (you)" : ""), "name"));
    const badge = (text, cls, label) => {
      const b = el("span", text, "badge " + cls);
      if (label) b.title = label;
      node.append(b, " ");
    };
    if (n === SEAT) node.classList.add("you");
    if (n === s.leader && !s.over) { node.classList.add("leader"); badge("Leader", "leader"); }
    if (live && live.team && live.team.includes(n)) { node.classList.add("team"); badge("on the team", "team"); }
    if (live && live.votes) {
      const v = live.votes;
      if (v.approvals.includes(n)) badge("✓ approved", "approve");
      else if (v.rejections.includes(n)) badge("✗ rejected", "reject");
      else if (n === SEAT && live.own !== null) {
        badge(live.own ? "✓ you approved" : "✗ you rejected", live.own ? "approve" : "reject");
      }
    }
    if (knowledge.holder === n && !s.over) badge("Lady", "lady", "holds the Lady of the Lake");
    for (const [cls, short, long] of marks(n)) { badge(short, cls, long); node.classList.add("known-" + cls); }
    if (n === SEAT && s.request) badge("your turn", "waiting");
    else if (waiting.has(n)) badge("thinking…", "waiting");
    if (s.over && s.result) badge(s.result.roles[n], "role");
    items.push(node);
  }
  $("seats").replaceChildren(...items);
  $("phase").textContent = s.over ? "The game is over" : s.started === false ? "Waiting to start"
    : `Quest ${s.quest} · proposal ${s.proposal} of ${s.max_proposals}`;
  $("team-now").textContent = live && live.team ? `Team: ${players(live.team)}` : "";
}

function renderQuests(s) {
  $("quests").replaceChildren(...s.quests.map((q) => {
    const node = el("li", null, q.result || "");
    node.dataset.quest = q.quest;
    const done = knowledge.quests[q.quest];
    if (!s.over && !q.result && q.quest === s.quest) node.classList.add("current");
    node.append(el("span", q.result === "success" ? "✓" : q.result === "fail" ? "✗" : q.team_size, "disc"));
    node.append(el("span", `quest ${q.quest}`), el("br"));
    node.append(el("span", done ? `${done.fails} fail${done.fails === 1 ? "" : "s"}` : `team ${q.team_size}`, "muted"));
    if (!done && q.fails_required > 1) node.append(el("br"), el("span", `${q.fails_required} fails`, "muted"));
    const cards = `${q.fails_required} fail card${q.fails_required > 1 ? "s" : ""}`;
    node.title = `Quest ${q.quest}: a team of ${q.team_size}, ${cards} to fail it`
      + (q.result ? `: ${q.result}` : "");
    return node;
  }));
  renderSetup(s.setup);
}

/** The roles in play by side, who strikes at Merlin, the votes' kind, the Lady of the Lake (the state's setup). */
function renderSetup(u) {
  if (!u) { $("setup").textContent = ""; return; }
  const count = {};
  for (const r of u.roles) count[r] = (count[r] || 0) + 1;
  const side = (team) => Object.keys(count).filter((r) => u.sides[r] === team)
    .map((r) => (count[r] > 1 ? `${count[r]} × ${r}` : r)).join(", ");
  const parts = [`Good: ${side("good")}.`, `Evil: ${side("evil")}.`];
  if (u.assassin) parts.push(`Who strikes at Merlin: the ${u.assassin}.`);
  parts.push(u.votes_public ? "Votes are public." : "Votes are secret.");
  const lady = u.lady_of_the_lake;
  if (lady) parts.push(`The Lady of the Lake after quests ${lady.after_quests.join(", ")}.`);
  $("setup").textContent = parts.join(" ");
}

function renderPrivate(s) {
  $("private").hidden = WATCH;
  $("to-private").hidden = WATCH;
  if (WATCH) return;
  const side = s.setup && s.setup.sides && s.setup.sides[s.role];
  $("role").textContent = s.role ? `You are ${s.role}` + (side ? ` (${side}).` : ".")
    : "Your role comes with the deal.";
  const items = [];
  const night = knowledge.night;
  if (night) {
    items.push(nightLine(night));
  }
  for (const r of knowledge.lady) items.push(`The Lady of the Lake showed you: ${player(r.target)} is ${r.loyalty}.`);
  $("known").replaceChildren(...items.map((t) => el("li", t)));
  $("system").textContent = s.system || "";
}

function renderHistory() {
  const items = knowledge.proposals.map((p) => {
    const node = el("li");
    node.append(el("div", `Quest ${p.quest} · proposal ${p.attempt}` + (p.final ? " (the last)" : ""), "head"));
    node.append(el("div", `${player(p.leader)} leads` + (p.team ? (p.assigned ? "; assigns " : "; proposes ")
      + players(p.team) : `; a team of ${p.size} to come`)));
    const v = p.votes;
    if (v) {
      node.classList.add(v.approved ? "approved" : "rejected");
      const verdict = `${v.approved ? "Approved" : "Rejected"} ${v.approve_count}–${v.reject_count}`;
      const who = v.approvals.length || v.rejections.length
        ? `: ✓ ${players(v.approvals)}; ✗ ${players(v.rejections)}`
        : " (a secret vote" + (p.own === null ? ")" : `; you ${p.own ? "approved" : "rejected"})`);
      node.append(el("div", verdict + who, "votes"));
    } else if (p.assigned) node.classList.add("approved");
    else node.classList.add("open");
    return node;
  });
  $("history").replaceChildren(...items);
}

function renderLog(s) {
  if (s.lines.length < shownLines) { $("log").replaceChildren(); shownLines = 0; }
  const log = $("log");
  const stick = log.scrollTop + log.clientHeight >= log.scrollHeight - 30;
  const byLine = new Map((s.events || []).map((e) => [e.line, e]));  // each event's first line
  for (let i = shownLines; i < s.lines.length; i++) {
    const e = byLine.get(i);
    const node = el("li");
    const text = el("span", null, "text");
    if (e && e.type === "speech") {  // the words as typed, bidi marks obeyed inside <bdi> (the line escapes them)
      node.className = "speech";
      text.append(el("span", `${player(e.seat)} said: `, "who"), el("bdi", e.text, "said"));
    } else text.textContent = s.lines[i];
    if (!WATCH && !e) node.className = "note";  // the table's own word to this seat (a decision made for it)
    node.append(text);
    log.append(node);
  }
  shownLines = s.lines.length;
  if (stick) log.scrollTop = log.scrollHeight;
}

/** What the host answered for this seat when its time ran out (the state's `timeout_notice`, kept until the
 * person's next answer is taken). */
function renderNotice(s) {
  const notice = WATCH ? null : s.timeout_notice;
  $("notice").hidden = !notice;
  $("notice-text").textContent = notice ? notice.text : "";
}

// ------------------------------------------------------------------ answering

function send(answer) {
  if (sending || openId === null) return;
  sending = true;
  $("error").textContent = "";
  for (const b of document.querySelectorAll("#request button")) b.disabled = true;
  fetch(`/api/seat/${SEAT}/answer?token=${encodeURIComponent(TOKEN)}`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ answer, id: openId }),
  }).then(async (r) => {
    const body = await r.json().catch(() => ({}));
    if (r.ok) { $("status").textContent = "Answer sent."; $("request").hidden = true; openId = null; turn(false); }
    else $("error").textContent = body.error ? `Not taken: ${body.error}. Try again.` : `Not taken (${r.status}).`;
  }).catch(() => { $("error").textContent = "The table cannot be reached; try again."; })
    .finally(() => {
      sending = false;
      for (const b of document.querySelectorAll("#request button")) b.disabled = false;
      poll();
    });
}

/** "Player 3" with what the seat knows of them: "Player 3 (your evil teammate)". */
function described(n) {
  const known = marks(n).map((m) => m[2]);
  return player(n) + (n === SEAT ? " (you)" : "") + (known.length ? ` (${known.join("; ")})` : "");
}

function choiceButton(label, answer, n) {
  const b = el("button", label, "choice");
  b.type = "button";
  b.dataset.answer = answer;
  if (n !== undefined && marks(n).some((m) => m[0] === "mate")) b.classList.add("mate");
  b.addEventListener("click", () => send(answer));
  return b;
}

function renderRequest(req) {
  const box = $("request");
  if (!req) { box.hidden = true; openId = null; turn(false); return; }
  if (req.id === openId) return;  // the same request: keep what the person has picked or typed
  openId = req.id;
  box.hidden = false;
  box.dataset.kind = req.kind;
  $("prompt").textContent = req.text;
  $("error").textContent = "";
  // the answer's shape comes from the request's legal answers (the decision kind's `legal`), never its kind
  const legal = req.legal || {};
  const free = !legal.players && !legal.options;
  $("speak").hidden = !free;
  $("submit").hidden = !(free || legal.team_size);
  $("picked").textContent = "";
  const choices = $("choices");
  choices.replaceChildren();
  if (legal.team_size) {
    for (const n of legal.players) {
      const pick = el("input");
      pick.type = "checkbox"; pick.value = n; pick.className = "pick";
      const label = el("label");
      label.append(pick, " " + described(n));
      if (marks(n).some((m) => m[0] === "mate")) label.classList.add("mate");
      choices.append(label);
    }
    const count = () => {
      const picked = [...document.querySelectorAll("#choices input.pick:checked")];
      $("picked").textContent = `${picked.length} of ${legal.team_size} picked`;
      $("submit").disabled = picked.length !== legal.team_size;
    };
    choices.onchange = count;
    count();
  } else if (legal.options) {
    for (const option of legal.options) choices.append(choiceButton(option, option));
  } else if (legal.players) {
    for (const n of legal.players) choices.append(choiceButton(described(n), player(n), n));
    if (legal.may_pass) choices.append(choiceButton("pass", "pass"));
  } else {  // free text, at most the request's max_chars (the cap a program's speech has too)
    $("speech").value = "";
    if (legal.max_chars) { $("speech").maxLength = legal.max_chars; $("speech-max").textContent = legal.max_chars; }
    $("speech-count").textContent = "0";
    $("submit").disabled = false;
  }
  $("status").textContent = "The table is waiting for you.";
  turn(true);
}

$("submit").addEventListener("click", () => {
  if (!openId) return;
  if (!$("speak").hidden) send($("speech").value);
  else send([...document.querySelectorAll("#choices input.pick:checked")].map((b) => player(b.value)).join(", "));
});
$("speech").addEventListener("input", () => { $("speech-count").textContent = $("speech").value.length; });

// ------------------------------------------------------------------ your turn: the title, and a sound if asked for

let audio = null, yourTurn = false;
$("sound-box").hidden = WATCH;
$("sound").addEventListener("change", () => {  // made on a click: browsers let only a person start sound
  if ($("sound").checked && !audio && window.AudioContext) audio = new AudioContext();
});

function turn(on) {
  if (on && !yourTurn && audio && $("sound").checked) {
    const tone = audio.createOscillator(), gain = audio.createGain();
    tone.frequency.value = 660;
    gain.gain.setValueAtTime(0.15, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.4);
    tone.connect(gain).connect(audio.destination);
    tone.start();
    tone.stop(audio.currentTime + 0.4);
  }
  yourTurn = on;
  document.title = (on ? "▶ Your turn · " : "") + title;
}

// ------------------------------------------------------------------ the state, twice a second

function renderEnd(s) {
  $("end").hidden = !(s.over && s.result);
  if ($("end").hidden) return;
  const why = s.result.reason.replace(/_/g, " ");
  $("winner").textContent = `${s.result.winner === "good" ? "Good" : "Evil"} wins (${why})`;
  const rows = Object.entries(s.result.roles).map(([n, role]) => {
    const row = el("tr");
    row.append(el("td", player(n) + (Number(n) === SEAT ? " (you)" : "")), el("td", role));
    return row;
  });
  $("roles").replaceChildren($("roles").querySelector("caption"), ...rows);
  $("replay").hidden = !s.replay;
  if (s.replay) $("replay-link").href = s.replay;
  $("request").hidden = true;
  $("status").textContent = s.game < s.games ? "The game is over; the next one starts soon." : "The game is over.";
}

function render(s) {
  if (s.game !== game) {  // a new game of the session: its own requests and log
    game = s.game; openId = null; shownLines = 0; $("log").replaceChildren();
  }
  knowledge = readEvents(s.events || []);
  const which = s.games > 1 ? ` · game ${Math.max(s.game, 1)} of ${s.games}` : "";
  title = (WATCH ? "Avalon table: spectator" : `Avalon table: Player ${SEAT}`) + which;
  $("title").textContent = title;
  document.title = (yourTurn ? "▶ Your turn · " : "") + title;
  $("who").textContent = WATCH ? "public events only; the roles at the end" : (s.role ? `You are ${s.role}` : "");
  renderSeats(s);
  renderQuests(s);
  renderPrivate(s);
  renderHistory();
  renderLog(s);
  if (!WATCH) { renderRequest(s.request); renderNotice(s); }
  if (!s.started) {
    const missing = s.people.filter((n) => !s.joined.includes(n)).map(player);
    $("status").textContent = "The game starts when everyone has opened their page; "
      + `waiting for ${missing.join(", ") || "nobody"}.`;
  } else if (!s.request && !s.over && !sending) {
    const waiting = (s.waiting || []).map((w) => player(w.seat));
    $("status").textContent = waiting.length ? `Waiting for ${waiting.join(", ")}` : "Waiting for the other players.";
  }
  renderEnd(s);
  document.body.dataset.over = s.over ? "yes" : "no";
}

async function poll() {
  try {
    const r = await fetch(API, { cache: "no-store" });
    if (r.status === 403) { $("status").textContent = "This address has a wrong token."; return; }
    const text = await r.text();
    if (text !== last) { last = text; render(JSON.parse(text)); }
  } catch (e) {
    $("status").textContent = "The table cannot be reached (the game may be over).";
  }
}
poll();
setInterval(poll, 500);
