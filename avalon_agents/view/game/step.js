// Stepping through the timeline: one current entry, marked and scrolled into view, named in the URL's hash
// (#e-N). The previous/next buttons and the keys (ArrowRight or j, ArrowLeft or k, Home, End) move it through
// the entries the seat filter shows; a link to an entry (on opening the page, or later) selects it, and so
// does a click on it. Each change of the current entry is told as an "entryselected" event on the document.
let current = null; // the current entry's index in DATA.items

const shownEntries = () => NODES.flatMap((node, i) => (node.hidden ? [] : [i]));

function selectEntry(i, { scroll = true } = {}) {
  if (current !== null) {
    NODES[current].classList.remove("current");
    NODES[current].removeAttribute("aria-current");
  }
  current = i;
  NODES[i].classList.add("current");
  NODES[i].setAttribute("aria-current", "true");
  if (scroll) NODES[i].scrollIntoView({ block: "center" });
  if (location.hash !== `#${entryId(i)}`) {
    try {
      history.replaceState(null, "", `#${entryId(i)}`);
    } catch {
      location.hash = entryId(i); // a browser refusing replaceState here: the hashchange selects i again
    }
  }
  showPosition();
  document.dispatchEvent(new CustomEvent("entryselected", { detail: i }));
}

// The shown entry `delta` (1 or -1) from the current one (or from the start when there is none).
function step(delta) {
  const shown = shownEntries();
  if (!shown.length) return;
  const from = current === null ? -1 : current;
  const target = delta > 0 ? shown.find((i) => i > from) : [...shown].reverse().find((i) => i < from);
  selectEntry(target !== undefined ? target : delta > 0 ? shown[shown.length - 1] : shown[0]);
}

function stepToEnd(last) {
  const shown = shownEntries();
  if (shown.length) selectEntry(last ? shown[shown.length - 1] : shown[0]);
}

function showPosition() {
  const shown = shownEntries();
  const at = current === null ? -1 : shown.indexOf(current);
  document.getElementById("position").textContent = `entry ${at < 0 ? "–" : at + 1} of ${shown.length}`;
  document.getElementById("step-prev").disabled = !shown.length || at === 0;
  document.getElementById("step-next").disabled = !shown.length || at === shown.length - 1;
}

// The entry the URL's hash names, if any; the seat filter shows everyone if it hid it.
function selectFromHash() {
  const m = /^#e-(\d+)$/.exec(location.hash);
  const i = m ? Number(m[1]) - 1 : -1;
  if (i < 0 || i >= NODES.length) return;
  if (i === current) return;
  if (NODES[i].hidden) {
    const filter = document.getElementById("seat-filter");
    filter.value = "all";
    filter.dispatchEvent(new Event("change"));
  }
  selectEntry(i);
}

const typing = (target) => target instanceof Element && target.closest("input, textarea, select, [contenteditable]");
const STEP_KEYS = { ArrowRight: () => step(1), j: () => step(1), ArrowLeft: () => step(-1), k: () => step(-1),
  Home: () => stepToEnd(false), End: () => stepToEnd(true) };

function setupStepping() {
  document.getElementById("step-prev").addEventListener("click", () => step(-1));
  document.getElementById("step-next").addEventListener("click", () => step(1));
  document.addEventListener("keydown", (e) => {
    const act = STEP_KEYS[e.key];
    if (!act || e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    e.preventDefault();
    act();
  });
  document.getElementById("timeline").addEventListener("click", (e) => {
    const node = e.target.closest(".item");
    if (node && !e.target.closest("a")) selectEntry(Number(node.dataset.index), { scroll: false });
  });
  window.addEventListener("hashchange", selectFromHash);
}
