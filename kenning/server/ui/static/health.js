// Health: datasets with their counts, model usage, pending and failed memories.

import { api } from "./api.js";
import { fmt, h, memoryHref } from "./page.js";

const COUNTS = ["memories", "pending", "failed", "chunks", "entities", "facts_live", "facts_closed"];

export async function healthView(_id, p) {
  const dataset = p.get("dataset") || "main";
  const datasets = await api("datasets");
  const [total, ...each] = await Promise.all([api("stats"), ...datasets.slice(0, 50).map((d) => api("stats", { query: { dataset: d.name } }))]);
  const [pending, failed] = await Promise.all(["pending", "failed"].map((status) =>
    (datasets.some((d) => d.name === dataset) ? api("memories", { query: { dataset, status, limit: 20 } }) : { items: [] })));
  const u = total.usage;
  const row = (name, s, perms) => h("tr", {}, h("th", { scope: "row" }, name),
    COUNTS.map((c) => h("td", {}, String(s[c]))), h("td", {}, fmt(s.last_processed_at) || "never"), h("td", {}, perms));
  return h("section", { "data-title": "Health", "aria-labelledby": "health-title" },
    h("h1", { id: "health-title" }, "Health"),
    h("p", {}, `Embedder: ${total.embedder || "none recorded"}.`),
    h("div", { class: "scroll" }, h("table", { class: "list counts" },
      h("caption", {}, "Datasets you may read"),
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "Dataset"), COUNTS.map((c) => h("th", { scope: "col" }, c.replace("_", " "))),
        h("th", { scope: "col" }, "Last processed"), h("th", { scope: "col" }, "Your permissions"))),
      h("tbody", {}, datasets.slice(0, 50).map((d, i) => row(d.name, each[i], d.permissions.join(", "))), row("all", total, "")))),
    h("h2", {}, "Model usage"),
    h("dl", { class: "fields" },
      h("dt", {}, "Chat calls"), h("dd", {}, String(u.chat_calls)),
      h("dt", {}, "Tokens"), h("dd", {}, `${u.prompt_tokens} prompt + ${u.completion_tokens} completion`),
      h("dt", {}, "Embedding calls"), h("dd", {}, `${u.embedding_calls} (${u.embedded_texts} texts)`),
      h("dt", {}, "Model time"), h("dd", {}, `${u.seconds.toFixed(1)} s`)),
    listOf(`Pending in ${dataset}`, pending.items, (m) => fmt(m.created_at)),
    listOf(`Failed in ${dataset}`, failed.items, (m) => m.error || "no error recorded"));
}

function listOf(title, items, detail) {
  return [h("h2", {}, `${title} (${items.length}${items.length === 20 ? "+" : ""})`),
    items.length ? h("ul", {}, items.map((m) => h("li", {}, h("a", { href: memoryHref(m.id), class: "mono" }, m.id), ` — ${detail(m)}`)))
      : h("p", {}, "None.")];
}
