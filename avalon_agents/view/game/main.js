// Runs the page: the header, the timeline's entries, the seat filter, the roles button, stepping and search;
// then selects the entry the URL names (#e-N), if any.
const r = DATA.result;
document.getElementById("title").textContent = `Avalon replay: ${DATA.game}`;
document.title = `Avalon replay: ${DATA.game}`;
document.getElementById("outcome").textContent = (r.winner ? `${words(r.winner)} wins (${words(r.reason)})`
  : `still playing: ${DATA.items.length} entries so far`) + ` · ${SEATS.length} players`
  + ` · ${DATA.rules} rules · seed ${DATA.seed} · ${r.proposals} proposals`;
document.getElementById("quests").append(el("span", "track", ...r.quests.map((q) =>
  Object.assign(el("span", q.success ? "success" : "fail", q.quest), { title: `team ${players(q.team)}, ${q.fails} fails` }))));
const NODES = DATA.items.map(renderItem);
document.getElementById("timeline").append(...NODES);
const select = document.getElementById("seat-filter");
for (const s of SEATS) select.append(Object.assign(el("option", "", `${player(s)} (${DATA.seats[s].kind})`), { value: s }));
select.addEventListener("change", () => {
  applyFilter();
  showPosition();
  runSearch();
});
const button = document.getElementById("roles-button");
button.addEventListener("click", () => {
  const shown = document.body.classList.toggle("roles-shown");
  button.textContent = shown ? "Hide roles" : "Show roles";
  runSearch();
});
setupStepping();
setupSearch();
applyFilter();
showPosition();
selectFromHash();
