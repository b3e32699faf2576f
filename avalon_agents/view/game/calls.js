// An LLM call's record: a <details>, collapsed, whose summary names the seat, what the call was for, the model
// and the tokens; its messages (role and content, the contents kept once in DATA.texts) and its reply are
// written into it, as text, when it is first opened.
function describeCall(r) {
  const what = [r.stage, r.name, r.part].filter(Boolean).join(" ") + (r.request ? ` for ${r.request}` : "");
  const model = (r.settings && r.settings.spec) || "model unknown";
  const tokens = r.tokens_source === "none" ? "tokens not counted"
    : `${r.input_tokens} in` + (r.cached_tokens ? ` (${r.cached_tokens} cached)` : "") + ` + ${r.output_tokens} out tokens`;
  const notes = [r.attempts > 1 ? `${r.attempts} attempts` : "", r.replayed ? "replayed" : "",
    r.outcome !== "ok" ? r.outcome : ""].filter(Boolean);
  const who = el("span", "what", `${r.seat == null ? "no seat" : player(r.seat)} · LLM call`
    + (r.quest ? ` · quest ${r.quest}` : ""));
  const head = el("summary", "", who, el("span", "call-name", what), ` · ${model} · ${tokens}`
    + (notes.length ? ` · ${notes.join(", ")}` : ""));
  const details = el("details", "call", head);
  details.addEventListener("toggle", () => {
    if (details.open && !details.querySelector(".call-body")) details.append(callBody(r));
  });
  return details;
}

function callBody(r) {
  const message = (role, text) => el("div", "message", el("div", "speaker", role), el("pre", "text", text));
  const body = el("div", "call-body", ...r.messages.map((m) => message(m.role, DATA.texts[m.text])),
    message("reply", r.reply == null ? "(no reply)" : r.reply));
  if (r.error) body.append(el("p", "error", `error: ${r.error}`));
  return body;
}
