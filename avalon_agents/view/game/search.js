// Search: the shown entries whose text holds the query (any case) are highlighted and counted; Enter moves the
// current entry to the next of them (Shift+Enter the previous), "/" puts the cursor in the box. An entry's text
// is what it shows, its collapsed module output included; not a dealt role while roles are hidden, nor an LLM
// call's prompt and reply.
let matches = []; // indices in DATA.items of the shown entries that hold the query
let SEARCH_TEXT = null; // { hidden: [...], shown: [...] }: each entry's text, without and with the dealt roles

function entryText(node, roles) {
  let text = "";
  const walk = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
  for (let t = walk.nextNode(); t; t = walk.nextNode()) {
    if (!t.parentElement.closest(".link") && (roles || !t.parentElement.closest(".role"))) text += t.data;
  }
  return text.toLowerCase();
}

const query = () => document.getElementById("search").value.trim().toLowerCase();

function runSearch() {
  const q = query();
  const texts = SEARCH_TEXT[document.body.classList.contains("roles-shown") ? "shown" : "hidden"];
  matches = [];
  NODES.forEach((node, i) => {
    const hit = q !== "" && !node.hidden && texts[i].includes(q);
    node.classList.toggle("match", hit);
    if (hit) matches.push(i);
  });
  showMatches();
}

function showMatches() {
  const at = current === null ? -1 : matches.indexOf(current);
  document.getElementById("matches").textContent = query() === "" ? ""
    : !matches.length ? "no match"
    : at >= 0 ? `match ${at + 1} of ${matches.length}` : `${matches.length} match${matches.length === 1 ? "" : "es"}`;
}

// The next match after the current entry (delta 1) or the one before it (-1), round the end.
function stepMatch(delta) {
  if (!matches.length) return;
  const from = current === null ? (delta > 0 ? -1 : NODES.length) : current;
  const next = delta > 0 ? matches.find((i) => i > from) : [...matches].reverse().find((i) => i < from);
  const target = next !== undefined ? next : delta > 0 ? matches[0] : matches[matches.length - 1];
  const details = NODES[target].querySelector("details");
  if (details && !details.open && !entryText(details.querySelector("summary"), true).includes(query())) {
    details.open = true; // the words are in its collapsed body
  }
  selectEntry(target);
}

function setupSearch() {
  SEARCH_TEXT = { hidden: NODES.map((n) => entryText(n, false)), shown: NODES.map((n) => entryText(n, true)) };
  const box = document.getElementById("search");
  box.addEventListener("input", runSearch);
  document.addEventListener("entryselected", showMatches);
  box.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    stepMatch(e.shiftKey ? -1 : 1);
  });
  document.addEventListener("keydown", (e) => {
    if (e.key !== "/" || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    e.preventDefault();
    box.focus();
  });
}
