// Search: a recall over /v1/recall, its hits with lanes, validity and provenance.

import { api } from "./api.js";
import { chips, entityHref, fmt, go, graphHref, h, interval, memoryHref } from "./page.js";
import { hitText, isDocument, isMessage, origin, words } from "./prose.js";

const TYPES = ["hybrid", "auto", "chunks", "chunks_lexical", "facts", "entities", "graph", "temporal",
  "graph_completion", "rag_completion"];

export async function searchView(_id, p) {
  const q = p.get("q") || "";
  const type = p.get("type") || "hybrid";
  const topK = p.get("top_k") || "10";
  const form = h("form", { class: "search", role: "search", onsubmit: (event) => {
    event.preventDefault();
    const f = event.target.elements;
    go("#/search", { q: f.q.value.trim(), type: f.type.value === "hybrid" ? "" : f.type.value,
      top_k: f.top_k.value === "10" ? "" : f.top_k.value });
  } },
  h("label", { class: "grow" }, "Query", h("input", { type: "search", name: "q", value: q, required: true,
    placeholder: "Where does Alice work?", autofocus: !q })),
  h("label", {}, "Search type", h("select", { name: "type" },
    TYPES.map((t) => h("option", { value: t, selected: t === type }, t)))),
  h("label", {}, "Top k", h("input", { type: "number", name: "top_k", min: 1, max: 1000, value: topK })),
  h("button", { type: "submit" }, "Search"));
  const view = h("section", { "aria-labelledby": "search-title", "data-title": q ? `“${q}”` : "Search" },
    h("h1", { id: "search-title" }, "Search"), form);
  if (!q) {
    view.append(h("p", { class: "hint" }, "Ask what the memory knows. Set “As of” to see what was true at a past moment."));
    return view;
  }
  const result = await api("recall", { method: "POST", body: {
    query: q, dataset: p.get("dataset") || "main", search_type: type, top_k: Number(topK),
    as_of: p.get("as_of") || null, known_at: p.get("known_at") || null,
  } });
  view.append(summary(result));
  if (result.answer) view.append(h("blockquote", { class: "answer" }, h("strong", {}, "Answer: "), result.answer));
  const memories = Object.fromEntries(result.memories.map((m) => [m.id, m]));
  view.append(h("ol", { class: "hits", "aria-label": "Hits" }, result.hits.map((item) => hit(item, memories[item.memory_ids[0]]))));
  return view;
}

function summary(result) {
  const when = [result.as_of && `valid at ${fmt(result.as_of)}`, result.known_at && `known at ${fmt(result.known_at)}`]
    .filter(Boolean).join(", ");
  return h("p", { class: "summary" }, `${result.hits.length} hit${result.hits.length === 1 ? "" : "s"} `,
    `(${result.search_type}, ${Math.round(result.seconds * 1000)} ms)`, when ? ` — ${when}` : " — now");
}

/** What a hit is, for people: a fact, an entity, a document's passage, a message, a passage. */
function label(item) {
  if (isDocument(item)) return "document";
  if (isMessage(item)) return "message";
  return item.kind === "chunk" ? "passage" : item.kind;
}

function hit(item, memory) {
  const closed = !item.current || item.invalid_at || item.expired_at;
  const said = isMessage(item) || isDocument(item); // their time is on the origin line
  return h("li", { class: `hit ${item.kind}${item.current ? "" : " history"}`, "data-kind": item.kind, "data-label": label(item) },
    h("div", { class: "hit-head" },
      h("span", { class: "kind" }, label(item)),
      item.kind === "fact" && item.relation ? h("span", { class: "relation", title: "relation" }, words(item.relation)) : null,
      h("span", { class: "score", title: "score" }, item.score.toFixed(3)),
      h("span", { class: "lanes", "aria-label": "found by lanes" }, chips(item.lanes)),
      item.current ? null : h("span", { class: "badge closed" }, "not valid then")),
    origin(item, memory),
    hitText(item),
    (item.valid_at && !said) || closed ? h("p", { class: "validity" }, `valid ${interval(item.valid_at, item.invalid_at)}`,
      item.expired_at ? `; no longer believed since ${fmt(item.expired_at)}` : "",
      item.superseded_by && item.source ? [" — superseded: see ",
        h("a", { href: entityHref(item.source) }, `${item.source}’s timeline`)] : "") : null,
    h("p", { class: "links" }, entityLinks(item), provenance(item.memory_ids)));
}

function entityLinks(item) {
  if (item.kind === "entity") {
    return [h("a", { href: entityHref(item.id) }, "entity page"), " · ", h("a", { href: graphHref(item.id) }, "graph"), " · "];
  }
  if (item.kind === "fact") {
    return ["entities: ", h("a", { href: entityHref(item.source) }, item.source), ", ",
      h("a", { href: entityHref(item.target) }, item.target), " · "];
  }
  return [];
}

function provenance(ids) {
  if (!ids.length) return "no memory recorded";
  return ["from ", ids.flatMap((id, i) => [i ? ", " : "", h("a", { href: memoryHref(id), class: "mono" }, id)])];
}
