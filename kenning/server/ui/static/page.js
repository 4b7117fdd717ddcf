// Small helpers shared by the views: building elements, the URL state, dates, dialogs.

/** h("a", {href: "#/x"}, "text", child…): an element; strings become text, never HTML. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === false || value === null || value === undefined) continue;
    if (name.startsWith("on")) el.addEventListener(name.slice(2), value);
    else if (name === "style") el.style.cssText = value; // CSSOM: allowed by the page's CSP
    else el.setAttribute(name, value === true ? "" : value);
  }
  el.append(...children.flat(Infinity).filter((c) => c !== null && c !== undefined && c !== false));
  return el;
}

/** The view's state: the query string (dataset, as_of, search terms, filters). */
export const params = () => new URLSearchParams(location.search);

/** Change the URL (query `changes`, and `hash` if given) and re-render. */
export function go(hash, changes = {}) {
  const p = params();
  for (const [name, value] of Object.entries(changes)) {
    if (value === null || value === undefined || value === "") p.delete(name);
    else p.set(name, String(value));
  }
  const query = p.toString();
  const url = `${location.pathname}${query ? `?${query}` : ""}${hash ?? location.hash}`;
  if (new URL(url, location.href).href === location.href) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  window.dispatchEvent(new Event("kenning:navigate"));
}

export const entityHref = (idOrName) => `#/entity/${encodeURIComponent(idOrName)}`;
export const graphHref = (idOrName) => `#/graph/${encodeURIComponent(idOrName)}`;
export const memoryHref = (id) => `#/memory/${encodeURIComponent(id)}`;

/** A date as YYYY-MM-DD, with the time (UTC) only when it is not midnight. */
export function fmt(value) {
  if (!value) return "";
  const iso = new Date(value).toISOString();
  return iso.endsWith("T00:00:00.000Z") ? iso.slice(0, 10) : `${iso.slice(0, 16).replace("T", " ")} UTC`;
}

/** "2020-01-01 → 2023-06-01" or "2023-06-01 → now". */
export const interval = (from, to) => `${fmt(from) || "?"} → ${to ? fmt(to) : "now"}`;

/** The instant a date control names (start of that day, UTC), or null. */
export function instant(name) {
  const value = params().get(name);
  const t = value ? Date.parse(value) : NaN;
  return Number.isNaN(t) ? null : t;
}

/** Was the fact true at `asOf` and believed at `knownAt` (both ms or null)? */
export function holds(fact, asOf, knownAt) {
  const at = (v) => (v ? Date.parse(v) : null);
  const valid = asOf === null || (at(fact.valid_at) <= asOf && (!fact.invalid_at || asOf < at(fact.invalid_at)));
  const known = knownAt === null || (at(fact.created_at) <= knownAt && (!fact.expired_at || knownAt < at(fact.expired_at)));
  return valid && known;
}

/** Ask before doing something that cannot be undone; resolves true on Confirm. */
export function confirmAction(text, confirmLabel) {
  const dialog = document.getElementById("confirm-dialog");
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = confirmLabel;
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true }));
}

/** Tell the user something happened (read out by screen readers). */
export function say(text) {
  document.getElementById("status").textContent = text;
}

export const chips = (words, cls = "chip") => words.map((w) => h("span", { class: cls }, w));
