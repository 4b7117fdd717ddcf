// Where a hit comes from, and its text read as prose: a document's passage shown as the
// paragraphs, lists and tables it is made of (its Markdown marks dropped), a message without
// the "Speaker: " its chunk begins with, a fact's relation in words. Everything is built as
// elements with text in them: store text never becomes HTML.

import { fmt, h } from "./page.js";

/** "works_at" -> "works at". */
export const words = (relation) => (relation || "").replaceAll("_", " ");

/** A location as the citation form the API's Location.__str__ gives: "p. 12 › Results". */
export function place(location) {
  if (!location) return "";
  return [location.page ? `p. ${location.page}` : "", location.slide ? `slide ${location.slide}` : "",
    location.sheet ? `sheet ${location.sheet}` : "", ...(location.headings || [])].filter(Boolean).join(" › ");
}

/** Is this hit a passage of a file (a chunk or memory whose memory has a source)? */
export const isDocument = (hit) => (hit.kind === "chunk" || hit.kind === "memory") && Boolean(hit.source);

/** Is this hit a message (it names its speaker)? */
export const isMessage = (hit) => (hit.kind === "chunk" || hit.kind === "memory") && Boolean(hit.speaker);

/** The line above a hit's text that says where it comes from (null when it says nothing). */
export function origin(hit, memory) {
  if (hit.kind === "fact" && memory && memory.kind === "facts") {
    return h("p", { class: "origin known" }, h("span", { class: "badge" }, "known fact"),
      memory.source ? [" from ", h("span", { class: "file", title: "source" }, memory.source)] : " (stated as a record, not extracted)");
  }
  if (isDocument(hit)) {
    const where = place(hit.location);
    return h("p", { class: "origin document" }, h("span", { class: "file", title: "file" }, hit.source),
      where ? [" › ", h("span", { class: "where" }, where)] : null);
  }
  if (isMessage(hit)) {
    return h("p", { class: "origin message" }, h("span", { class: "speaker", title: "speaker" }, hit.speaker),
      hit.valid_at ? [" · ", h("time", { datetime: hit.valid_at, title: "said at" }, fmt(hit.valid_at))] : null,
      memory && memory.session ? [" · session ", h("span", { class: "mono" }, memory.session)] : null);
  }
  return null;
}

/** A hit's text as elements: a document's passage as prose, a message without its speaker prefix. */
export function hitText(hit) {
  if (isDocument(hit)) return h("div", { class: "hit-text prose" }, prose(hit.text, (hit.location || {}).headings || []));
  let text = hit.text;
  if (isMessage(hit) && text.startsWith(`${hit.speaker}: `)) text = text.slice(hit.speaker.length + 2);
  return h("p", { class: "hit-text" }, text);
}

const HEADING = /^#{1,6}\s+(.*)$/;
const ITEM = /^\s*(?:[-*+]|\d+[.)])\s+(.*)$/;
const FENCE = /^```/;

/** Markdown-ish text as paragraphs, headings, lists, tables and code; a heading already
 * named by the location (`known`) is not repeated. */
export function prose(text, known = []) {
  const out = [];
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  for (let i = 0; i < lines.length;) {
    const line = lines[i];
    if (!line.trim()) { i += 1; continue; }
    if (FENCE.test(line)) {
      const code = [];
      for (i += 1; i < lines.length && !FENCE.test(lines[i]); i += 1) code.push(lines[i]);
      i += 1;
      out.push(h("pre", { class: "code" }, code.join("\n")));
      continue;
    }
    const heading = line.match(HEADING);
    if (heading) {
      const title = inline(heading[1]);
      if (!known.includes(heading[1].trim()) && !known.includes(title)) out.push(h("p", { class: "heading" }, title));
      i += 1;
      continue;
    }
    if (line.trim().startsWith("|")) {
      const rows = [];
      for (; i < lines.length && lines[i].trim().startsWith("|"); i += 1) rows.push(lines[i]);
      out.push(table(rows));
      continue;
    }
    if (ITEM.test(line)) {
      const items = [];
      for (; i < lines.length && ITEM.test(lines[i]); i += 1) items.push(h("li", {}, inline(lines[i].match(ITEM)[1])));
      out.push(h("ul", {}, items));
      continue;
    }
    const para = [];
    for (; i < lines.length && lines[i].trim() && !HEADING.test(lines[i]) && !ITEM.test(lines[i])
      && !FENCE.test(lines[i]) && !lines[i].trim().startsWith("|"); i += 1) para.push(lines[i].trim());
    out.push(h("p", {}, inline(para.join(" "))));
  }
  return out;
}

function table(rows) {
  const cells = (row) => row.trim().replace(/^\||\|$/g, "").split("|").map((c) => inline(c.trim()));
  const body = rows.filter((r) => !/^[\s|:-]+$/.test(r)); // the | --- | row only marks the header
  const [head, ...rest] = body;
  return h("div", { class: "scroll" }, h("table", { class: "md" },
    head ? h("thead", {}, h("tr", {}, cells(head).map((c) => h("th", { scope: "col" }, c)))) : null,
    h("tbody", {}, rest.map((r) => h("tr", {}, cells(r).map((c) => h("td", {}, c)))))));
}

/** A document's text on one line, its Markdown marks dropped (for lists and previews). */
export function plain(text) {
  return text.split("\n").map((line) => inline(line.replace(HEADING, "$1").replace(ITEM, "$1")
    .replace(/^\s*\|?[\s|:-]+\|?\s*$/, "").replace(/\s*\|\s*/g, " · ").replace(FENCE, "")))
    .filter((line) => line.trim()).join(" ").replace(/\s+/g, " ").trim();
}

/** A `facts` memory's records (one JSON object a line) as a table, or null if it holds none. */
export function records(content) {
  let rows;
  try {
    rows = content.split("\n").filter((line) => line.trim()).map((line) => JSON.parse(line));
  } catch {
    return null;
  }
  const columns = ["source", "relation", "target", "valid_at", "invalid_at", "description"];
  return h("div", { class: "scroll" }, h("table", { class: "md records" },
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows.map((r) => h("tr", {}, columns.map((c) => h("td", {},
      c.endsWith("_at") ? fmt(r[c]) : c === "relation" ? words(r[c]) : r[c] ?? "")))))));
}

/** Inline marks dropped: **bold**, _em_, `code`, [text](url) -> text, <br>. */
export function inline(text) {
  return text
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/(\*\*|__)(.+?)\1/g, "$2")
    .replace(/(^|[^\w*])[*_](?!\s)(.+?)(?<!\s)[*_](?=[^\w*]|$)/g, "$1$2")
    .replace(/`([^`]*)`/g, "$1")
    .replace(/<br\s*\/?>/gi, " ");
}
