// An entity's neighbourhood (/v1/graph) drawn with Cytoscape.js (vendored: vendor/cytoscape.min.js).
// Pan and zoom with the mouse or touch; click a node to open it; hover an edge for its fact.
// The same facts are listed under the drawing, for keyboards and screen readers.

import { api } from "./api.js";
import { entityHref, go, h, holds, instant, interval } from "./page.js";

export async function graphView(id, p) {
  const depth = p.get("depth") === "2" ? 2 : 1;
  const limit = Number(p.get("limit")) || 100;
  const graph = await api("graph", { query: { entity: id, dataset: p.get("dataset") || "main", depth, limit } });
  const asOf = instant("as_of");
  const knownAt = instant("known_at");
  const names = Object.fromEntries(graph.nodes.map((n) => [n.id, n.name]));
  const tip = h("div", { class: "tip", role: "tooltip", hidden: true });
  const canvas = h("div", { id: "cy", class: "cy", role: "img",
    "aria-label": `Graph of ${graph.nodes.length} entities and ${graph.edges.length} facts around ${graph.center.name}` });
  const controls = h("form", { class: "inline", onchange: (event) => {
    const f = event.currentTarget.elements;
    go(undefined, { depth: f.depth.value === "1" ? "" : f.depth.value, limit: f.limit.value === "100" ? "" : f.limit.value });
  }, onsubmit: (event) => event.preventDefault() },
  h("label", {}, "Hops ", h("select", { name: "depth" }, [1, 2].map((d) => h("option", { value: d, selected: d === depth }, d)))),
  h("label", {}, "Most facts", h("input", { type: "number", name: "limit", min: 1, max: 500, value: limit })));
  const view = h("section", { class: "graph", "data-title": `Graph: ${graph.center.name}`, "aria-labelledby": "graph-title" },
    h("h1", { id: "graph-title" }, "Around ", h("a", { href: entityHref(graph.center.id) }, graph.center.name)),
    controls,
    graph.truncated ? h("p", { class: "hint" }, "Capped: more facts exist than are drawn.") : null,
    h("div", { class: "cy-wrap" }, canvas, tip),
    h("h2", { id: "edges-title" }, `Facts (${graph.edges.length})`),
    h("ul", { class: "edges", "aria-labelledby": "edges-title" }, graph.edges.map((f) => h("li", {
      class: holds(f, asOf, knownAt) ? "" : "not-then" },
    h("a", { href: entityHref(f.source_id) }, names[f.source_id] || f.source), ` ${f.relation} `,
    h("a", { href: entityHref(f.target_id) }, names[f.target_id] || f.target),
    ` — ${interval(f.valid_at, f.invalid_at)}`, f.invalid_at ? " (closed)" : ""))));
  view.onmount = () => draw(canvas, tip, graph, asOf, knownAt);
  return view;
}

function draw(container, tip, graph, asOf, knownAt) {
  const cy = window.cytoscape({
    container,
    elements: [
      ...graph.nodes.map((n) => ({ data: { id: n.id, label: n.name, hop: n.hop }, classes: n.hop ? "" : "center" })),
      ...graph.edges.map((f) => ({
        data: { id: f.id, source: f.source_id, target: f.target_id, label: f.relation, fact: f },
        classes: [f.invalid_at ? "closed" : "", holds(f, asOf, knownAt) ? "" : "not-then"].join(" "),
      })),
    ],
    layout: { name: "breadthfirst", roots: `#${CSS.escape(graph.center.id)}`, circle: true, spacingFactor: 1.2,
      padding: 30, animate: false },
    maxZoom: 2.5,
    minZoom: 0.2,
    style: [
      { selector: "node", style: { label: "data(label)", "background-color": "#4a6fa5", color: "#1b1f24",
        "font-size": 12, "text-valign": "bottom", "text-margin-y": 4, width: 22, height: 22 } },
      { selector: "node.center", style: { "background-color": "#c2571a", width: 30, height: 30 } },
      { selector: "edge", style: { label: "data(label)", "curve-style": "bezier", "target-arrow-shape": "triangle",
        width: 2, "line-color": "#8a99ad", "target-arrow-color": "#8a99ad", "font-size": 10, color: "#445",
        "text-rotation": "autorotate", "text-background-color": "#fff", "text-background-opacity": 0.8 } },
      { selector: "edge.closed", style: { "line-style": "dashed" } },
      { selector: "edge.not-then", style: { opacity: 0.25 } },
    ],
  });
  container.cy = cy; // for whoever inspects the page (the browser tests do)
  container.dataset.nodes = cy.nodes().map((n) => n.data("label")).sort().join("|");
  cy.on("tap", "node", (event) => {
    location.hash = entityHref(event.target.id());
  });
  cy.on("mouseover", "edge", (event) => {
    const f = event.target.data("fact");
    tip.replaceChildren(h("strong", {}, f.description || `${f.source} ${f.relation} ${f.target}`),
      h("br"), `valid ${interval(f.valid_at, f.invalid_at)}`, f.superseded_by ? " (superseded)" : "");
    tip.style.left = `${event.renderedPosition.x + 12}px`;
    tip.style.top = `${event.renderedPosition.y + 12}px`;
    tip.hidden = false;
  });
  cy.on("mouseout", "edge", () => {
    tip.hidden = true;
  });
}
