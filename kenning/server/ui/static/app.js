// The explorer's shell: the API key, the dataset and time controls, and the router that picks a
// view from the URL (#/search, #/entity/ID, #/graph/ID, #/memories, #/memory/ID, #/health).

import { api, apiKey, ApiError } from "./api.js";
import { entityView } from "./entity.js";
import { graphView } from "./graph.js";
import { healthView } from "./health.js";
import { memoriesView, memoryView } from "./memories.js";
import { go, h, params, say } from "./page.js";
import { searchView } from "./search.js";

const VIEWS = {
  search: searchView, entity: entityView, graph: graphView,
  memories: memoriesView, memory: memoryView, health: healthView,
};
const NAV = { entity: "search", graph: "search", memory: "memories" };
const main = document.getElementById("main");
let rendering = 0;
let needsKey = false;

function route() {
  const [name, ...rest] = location.hash.replace(/^#\/?/, "").split("/");
  return { name: VIEWS[name] ? name : "search", id: decodeURIComponent(rest.join("/")) };
}

async function render() {
  const token = ++rendering;
  shown = location.href;
  const { name, id } = route();
  syncScope();
  for (const link of document.querySelectorAll("nav a")) {
    if (link.dataset.view === (NAV[name] || name)) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  main.setAttribute("aria-busy", "true");
  let node;
  try {
    node = await VIEWS[name](id, params());
  } catch (exc) {
    if (exc instanceof ApiError && exc.status === 401 && needsKey) {
      apiKey.clear();
      await askKey(`The server refused the API key: ${exc.message}.`);
      return render();
    }
    node = h("div", { class: "error", role: "alert" }, h("strong", {}, "Could not load this view. "), exc.message);
  }
  if (token !== rendering) return;
  main.replaceChildren(node);
  main.removeAttribute("aria-busy");
  document.title = `${node.dataset?.title || name} · kenning explorer`;
  if (node.onmount) node.onmount();
}

// -- dataset and time -----------------------------------------------------------------------
const scope = document.getElementById("scope");

function syncScope() {
  const p = params();
  const select = scope.elements.dataset;
  const dataset = p.get("dataset") || "main";
  if (![...select.options].some((o) => o.value === dataset)) select.append(h("option", { value: dataset }, dataset));
  select.value = dataset;
  scope.elements.as_of.value = p.get("as_of") || "";
  scope.elements.known_at.value = p.get("known_at") || "";
}

async function loadDatasets() {
  // Only what the key may read; "main" stands in while there is nothing yet.
  const names = (await api("datasets")).map((d) => d.name);
  const shown = names.length ? names : ["main"];
  scope.elements.dataset.replaceChildren(...shown.map((n) => h("option", { value: n }, n)));
  const p = params();
  if (!p.get("dataset") && !shown.includes("main")) {
    p.set("dataset", shown[0]);
    history.replaceState(null, "", `${location.pathname}?${p}${location.hash}`);
  }
}

scope.addEventListener("change", (event) => {
  const field = event.target;
  const reset = field.name === "dataset" ? { offset: "" } : {};
  go(undefined, { [field.name]: field.value, ...reset });
});
scope.addEventListener("submit", (event) => event.preventDefault());
document.getElementById("scope-now").addEventListener("click", () => go(undefined, { as_of: "", known_at: "" }));

// -- the API key ----------------------------------------------------------------------------
function askKey(message = "") {
  const dialog = document.getElementById("key-dialog");
  const form = document.getElementById("key-form");
  const input = document.getElementById("key-input");
  const error = document.getElementById("key-error");
  error.textContent = message;
  input.value = "";
  dialog.addEventListener("cancel", (event) => event.preventDefault());
  dialog.showModal();
  input.focus();
  return new Promise((resolve) => {
    form.onsubmit = async (event) => {
      event.preventDefault();
      apiKey.set(input.value.trim());
      try {
        await whoAmI();
      } catch (exc) {
        apiKey.clear();
        error.textContent = exc.status === 401
          ? `The server refused this key (${exc.message}). Check it and try again.`
          : exc.message;
        input.select();
        return;
      }
      dialog.close();
      resolve();
    };
  });
}

async function whoAmI() {
  const me = await api("me");
  document.getElementById("who").textContent = needsKey ? `Signed in as ${me.name}${me.admin ? " (admin)" : ""}` : "Local (no key)";
  document.getElementById("sign-out").hidden = !needsKey;
  return me;
}

document.getElementById("sign-out").addEventListener("click", async () => {
  apiKey.clear();
  say("The key was forgotten.");
  await askKey();
  await start();
});

async function start() {
  try {
    await whoAmI();
  } catch (exc) {
    if (!(exc instanceof ApiError && exc.status === 401)) throw exc;
    apiKey.clear();
    await askKey(`The server refused the saved key (${exc.message}).`);
  }
  await loadDatasets();
  await render();
}

async function boot() {
  const health = await api("health");
  needsKey = health.auth;
  if (needsKey && !apiKey.get()) await askKey();
  await start();
}

// Going back fires both popstate and hashchange: render once per URL.
let shown = "";
const rerender = () => {
  if (location.href !== shown) render();
};
window.addEventListener("popstate", rerender);
window.addEventListener("hashchange", rerender);
window.addEventListener("kenning:navigate", render);
boot().catch((exc) => {
  main.replaceChildren(h("div", { class: "error", role: "alert" }, `The explorer could not start: ${exc.message}`));
});
