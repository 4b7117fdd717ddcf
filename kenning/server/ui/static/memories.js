// Memories: a paged, filtered list (/v1/memories) and one memory's page with pin, unpin, forget.

import { api } from "./api.js";
import { clip } from "./entity.js";
import { confirmAction, entityHref, fmt, go, h, interval, memoryHref, say } from "./page.js";
import { plain, records } from "./prose.js";

const PAGE = 25;
// the scopes a memory belongs to: each a column whose values filter the list
const SCOPES = ["user", "session"];
const FILTERS = {
  status: ["pending", "processing", "active", "failed", "superseded"],
  retention: ["permanent", "decision", "standard", "ephemeral", "session"],
  pinned: ["true", "false"],
};

export async function memoriesView(_id, p) {
  const offset = Number(p.get("offset")) || 0;
  const query = { dataset: p.get("dataset") || "main", limit: PAGE, offset, kind: p.get("kind") };
  for (const name of [...Object.keys(FILTERS), ...SCOPES]) query[name] = p.get(name);
  const page = await api("memories", { query });
  const form = h("form", { class: "filters", "aria-label": "Filters", onsubmit: (event) => {
    event.preventDefault();
    const f = event.target.elements;
    go("#/memories", { status: f.status.value, retention: f.retention.value, pinned: f.pinned.value,
      kind: f.kind.value.trim(), user: f.user.value.trim(), session: f.session.value.trim(), offset: "" });
  } },
  Object.entries(FILTERS).map(([name, values]) => h("label", {}, name[0].toUpperCase() + name.slice(1),
    h("select", { name }, h("option", { value: "" }, "any"),
      values.map((v) => h("option", { value: v, selected: p.get(name) === v }, v))))),
  h("label", {}, "Kind", h("input", { name: "kind", value: p.get("kind") || "", size: 10, placeholder: "any" })),
  SCOPES.map((name) => h("label", {}, name[0].toUpperCase() + name.slice(1),
    h("input", { name, value: p.get(name) || "", size: 10, placeholder: "any" }))),
  h("button", { type: "submit" }, "Filter"));
  const scope = (name, value) => (value ? h("a", { href: "#/memories", class: "scope-link", title: `only ${name} ${value}`,
    onclick: (event) => { event.preventDefault(); go("#/memories", { [name]: value, offset: "" }); } }, value) : "");
  const rows = page.items.map((m) => h("tr", {},
    h("td", {}, h("a", { href: memoryHref(m.id), class: "mono" }, m.id)),
    h("td", {}, m.kind), h("td", { class: "speaker" }, m.speaker || ""), h("td", { class: "user" }, scope("user", m.user)),
    h("td", { class: "session" }, scope("session", m.session)), h("td", {}, m.status),
    h("td", {}, m.pinned ? "pinned" : ""),
    // when it was said or happened (valid_at); stored at created_at
    h("td", { class: "when" }, h("time", { datetime: m.valid_at, title: `stored ${fmt(m.created_at)}` }, fmt(m.valid_at))),
    h("td", { class: "content" }, m.source ? [h("span", { class: "file" }, m.source), " "] : null,
      clip(m.topic || (m.metadata && m.metadata.format ? plain(m.content.slice(0, 2000)) : m.content), 120))));
  const pager = h("nav", { class: "pager", "aria-label": "Pages" },
    h("button", { type: "button", disabled: offset === 0, onclick: () => go(undefined, { offset: Math.max(0, offset - PAGE) || "" }) }, "Previous"),
    h("span", {}, page.items.length ? `${offset + 1}–${offset + page.items.length}` : "none"),
    h("button", { type: "button", disabled: page.next_offset === null, onclick: () => go(undefined, { offset: page.next_offset }) }, "Next"));
  return h("section", { "data-title": "Memories", "aria-labelledby": "memories-title" },
    h("h1", { id: "memories-title" }, "Memories"), form,
    h("div", { class: "scroll" }, h("table", { class: "list memlist" },
      h("thead", {}, h("tr", {}, ["Id", "Kind", "Speaker", "User", "Session", "Status", "Pinned", "Time", "Content"]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows))),
    page.items.length ? null : h("p", {}, "No memories match."), pager);
}

export async function memoryView(id) {
  const path = `memories/${encodeURIComponent(id)}`;
  const [m, prov, chain] = await Promise.all([api(path), api(`${path}/provenance`), api(`${path}/chain`)]);
  const field = (name, value) => (value === null || value === undefined || value === "" || (Array.isArray(value) && !value.length)
    ? null : [h("dt", {}, name), h("dd", {}, Array.isArray(value) ? h("ul", {}, value.map((v) => h("li", {}, v))) : value)]);
  const u = m.usage;
  return h("article", { class: "memory", "data-title": `Memory ${m.id}`, "aria-labelledby": "memory-title" },
    h("h1", { id: "memory-title" }, "Memory ", h("span", { class: "mono" }, m.id)),
    h("div", { class: "actions" }, m.pinned
      ? h("button", { type: "button", onclick: () => act(m, "unpin") }, "Unpin")
      : h("button", { type: "button", onclick: () => act(m, "pin") }, "Pin"),
    h("button", { type: "button", class: "danger", onclick: () => forget(m) }, "Forget")),
    (m.kind === "facts" && records(m.content)) || h("pre", { class: "content" }, m.content),
    h("dl", { class: "fields" },
      field("Dataset", m.dataset), field("Kind", m.kind), field("Status", m.status), field("Error", m.error),
      field("Topic", m.topic), field("Context", m.context), field("Decisions", m.decisions), field("Rationale", m.rationale),
      field("Source", m.source), field("Speaker", m.speaker && `${m.speaker}${m.role ? ` (${m.role})` : ""}`),
      field("User", m.user), field("Agent", m.agent), field("Session", m.session),
      field("Valid at", fmt(m.valid_at)), field("Created", fmt(m.created_at)),
      field("Processed", fmt(m.processed_at)), field("Retention", m.retention),
      field("Pinned", m.pinned ? `yes${m.pin_reason ? ` (${m.pin_reason})` : ""}` : "no"),
      field("Accessed", `${m.access_count} times${m.last_accessed_at ? `, last ${fmt(m.last_accessed_at)}` : ""}`),
      field("Model usage", `${u.chat_calls} chat calls, ${u.prompt_tokens + u.completion_tokens} tokens, ${u.embedding_calls} embedding calls (${u.embedded_texts} texts)`)),
    h("h2", {}, `Chunks (${prov.chunks.length})`),
    h("ol", { class: "chunks", start: 0 }, prov.chunks.map((c) => h("li", {}, h("span", { class: "chunk-text" }, c.text),
      ` — ${c.token_count} tokens`))),
    h("h2", {}, `Entities (${prov.entities.length})`),
    h("ul", { class: "entities" }, prov.entities.map((e) => h("li", {}, h("a", { href: entityHref(e.id) }, e.name), ` (${e.type})`))),
    h("h2", {}, `Facts (${prov.facts.length})`),
    h("ul", { class: "facts-list" }, prov.facts.map((f) => h("li", { class: f.invalid_at ? "closed" : "open" },
      f.description || `${f.source} ${f.relation} ${f.target}`, ` — valid ${interval(f.valid_at, f.invalid_at)}`,
      f.invalid_at ? " (closed)" : ""))),
    chain.length > 1 ? [h("h2", {}, "Supersession chain"),
      h("ol", {}, chain.map((c) => h("li", {}, c.id === m.id ? h("strong", { class: "mono" }, c.id)
        : h("a", { href: memoryHref(c.id), class: "mono" }, c.id), ` ${c.status}`)))] : null);
}

async function act(m, verb) {
  try {
    await api(`memories/${encodeURIComponent(m.id)}/${verb}`, { method: "POST" });
  } catch (exc) {
    say(`Could not ${verb} memory ${m.id}: ${exc.message}`);
    return;
  }
  say(`Memory ${m.id} ${verb}ned.`);
  go(undefined);
}

async function forget(m) {
  const sure = await confirmAction(
    `Forget memory ${m.id}? It is deleted with every entity and fact no other memory states. This cannot be undone.`,
    "Forget");
  if (!sure) return;
  let result;
  try {
    result = await api("forget", { method: "POST", body: { memory_id: m.id } });
  } catch (exc) {
    say(`Could not forget memory ${m.id}: ${exc.message}`);
    return;
  }
  say(`Forgot memory ${m.id}: ${result.fact_ids.length} facts and ${result.entity_ids.length} entities went with it.`);
  go("#/memories");
}
