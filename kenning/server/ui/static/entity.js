// An entity's page: its facts as a timeline over valid time, its aliases and its memories.

import { api } from "./api.js";
import { entityHref, fmt, graphHref, h, holds, instant, interval, memoryHref } from "./page.js";
import { words } from "./prose.js";

const DAY = 86_400_000;

export async function entityView(id, p) {
  const dataset = p.get("dataset") || "main";
  const { entity, facts } = await api("timeline", { query: { entity: id, dataset } });
  const asOf = instant("as_of");
  const knownAt = instant("known_at");
  const view = h("article", { class: "entity", "data-title": entity.name, "aria-labelledby": "entity-title" },
    h("h1", { id: "entity-title" }, entity.name, " ", h("span", { class: "type" }, entity.type)),
    entity.description ? h("p", { class: "description" }, entity.description) : null,
    h("p", {}, h("a", { href: graphHref(entity.id) }, "Show the graph around it"), " · ",
      h("span", { class: "mono" }, entity.id)),
    h("h2", {}, "Aliases"),
    entity.aliases.length ? h("ul", { class: "aliases" }, entity.aliases.map((a) => h("li", {}, a))) : h("p", {}, "None."),
    h("h2", { id: "timeline-title" }, `Facts (${facts.length})`),
    timeline(entity, facts, asOf, knownAt),
    h("h2", {}, "Memories that state them"),
    await memories(entity, facts));
  return view;
}

function timeline(entity, facts, asOf, knownAt) {
  if (!facts.length) return h("p", {}, "No facts.");
  const now = Date.now();
  const starts = facts.map((f) => Date.parse(f.valid_at));
  const ends = facts.map((f) => (f.invalid_at ? Date.parse(f.invalid_at) : now));
  const lo = Math.min(...starts, asOf ?? Infinity);
  const hi = Math.max(...ends, now, asOf ?? -Infinity) + DAY;
  const x = (t) => `${(((t - lo) / (hi - lo)) * 100).toFixed(2)}%`;
  const byId = Object.fromEntries(facts.map((f) => [f.id, f]));
  const note = asOf === null && knownAt === null ? null
    : h("p", { class: "summary" }, `${facts.filter((f) => holds(f, asOf, knownAt)).length} of ${facts.length} facts hold`,
      asOf === null ? "" : ` at ${fmt(asOf)}`, knownAt === null ? "" : ` as known at ${fmt(knownAt)}`, ".");
  const axis = h("div", { class: "axis", "aria-hidden": "true" },
    h("span", {}, fmt(lo)), h("span", {}, "now"),
    asOf === null ? null : h("span", { class: "as-of-mark", style: `left:${x(asOf)}` }, `as of ${fmt(asOf)}`));
  const rows = facts.map((f, i) => {
    const open = !f.invalid_at;
    const then = holds(f, asOf, knownAt);
    const successor = f.superseded_by && byId[f.superseded_by];
    const name = statement(entity, f);
    return h("li", { id: `fact-${f.id}`, tabindex: "-1", "data-fact": f.id,
      class: `fact ${open ? "open" : "closed"}${then ? "" : " not-then"}` },
    h("div", { class: "fact-text" },
      h("span", { class: "statement" }, name.inverse
        ? [h("strong", { class: "value" }, name.value), " ", h("span", { class: "relation" }, name.relation)]
        : [h("span", { class: "relation" }, name.relation), " ", h("strong", { class: "value" }, name.value)]), " ",
      h("span", { class: `badge ${open ? "open" : "closed"}` }, open ? "open" : "closed"),
      then ? null : h("span", { class: "badge not-then" }, "not valid then")),
    h("div", { class: "track" },
      h("div", { class: "bar", style: `left:${x(starts[i])};width:max(4px, calc(${x(ends[i])} - ${x(starts[i])}))`,
        title: `${name.text}: ${interval(f.valid_at, f.invalid_at)}` },
      h("span", { class: "bar-label" }, name.text))),
    h("div", { class: "fact-meta" },
      h("span", { class: "when" }, interval(f.valid_at, f.invalid_at)), " · ",
      f.description ? [h("q", { class: "sentence" }, f.description), " · "] : null,
      h("a", { href: entityHref(f.source_id === entity.id ? f.target_id : f.source_id) },
        f.source_id === entity.id ? f.target : f.source),
      f.expired_at ? ` · believed until ${fmt(f.expired_at)}` : "",
      f.superseded_by ? [" · superseded by ", successor
        ? h("button", { type: "button", class: "link", onclick: () => jump(f.superseded_by) },
          statement(entity, successor).text)
        : h("span", { class: "mono" }, f.superseded_by)] : "",
      " · from ", f.memory_ids.flatMap((m, k) => [k ? ", " : "", h("a", { href: memoryHref(m), class: "mono" }, m)])));
  });
  return h("div", { class: "timeline" }, note, axis, h("ol", { class: "facts", "aria-labelledby": "timeline-title" }, rows));
}

/** A fact as its relation and value, from this entity's side: "works at Globex" on Alice's
 * page, "Alice works at" on Globex's (the value is the other entity). */
export function statement(entity, fact) {
  const relation = words(fact.relation);
  if (fact.target_id === entity.id && fact.source_id !== entity.id) {
    return { relation, value: fact.source, inverse: true, text: `${fact.source} ${relation}` };
  }
  return { relation, value: fact.target, inverse: false, text: `${relation} ${fact.target}` };
}

function jump(factId) {
  const row = document.getElementById(`fact-${factId}`);
  row.scrollIntoView({ block: "center" });
  row.focus();
}

async function memories(entity, facts) {
  const ids = [...new Set([...entity.memory_ids, ...facts.flatMap((f) => f.memory_ids)])];
  if (!ids.length) return h("p", {}, "None.");
  const shown = await Promise.all(ids.slice(0, 20).map((id) => api(`memories/${encodeURIComponent(id)}`).catch(() => null)));
  return h("ul", { class: "memories" }, ids.slice(0, 20).map((id, i) => h("li", {},
    h("a", { href: memoryHref(id), class: "mono" }, id), shown[i] ? ` ${fmt(shown[i].valid_at)} — ${clip(shown[i].content)}` : "")),
  ids.length > 20 ? h("li", {}, `and ${ids.length - 20} more`) : null);
}

export const clip = (text, n = 160) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);
