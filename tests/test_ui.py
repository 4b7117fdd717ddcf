"""The web explorer at /ui, driven in a real headless Chromium (Debian's ``chromium``) by
Playwright, against a real server on 127.0.0.1 with auth on and a store built here.

Screenshots of each view go to tests/output/ui/ (gitignored).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

pytest.importorskip("fastapi")

CHROMIUM = "/usr/bin/chromium"
if not os.path.exists(CHROMIUM):
    pytest.skip(f"the UI tests need Chromium at {CHROMIUM} (Debian: apt-get install chromium)",
                allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the UI tests need playwright (pip install playwright)")

from tests.server_util import add_user, running  # noqa: E402

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(__file__).parent / "output" / "ui"
DATASET = "team"
POLICY = """# Travel policy

Read this before any trip.

## Trains

Book **trains** for the offsite through the [travel portal](https://portal.example), never by phone.
Second class is the default; first class needs a manager's sign-off.

- Seat reservations are included.
- Keep every receipt.
"""
CHAT = [{"role": "user", "content": "I booked the trains to the offsite for Friday morning.",
         "created_at": "2024-03-05T09:12:00Z"},
        {"role": "assistant", "content": "Great: I will remind you on Thursday to print the tickets.",
         "created_at": "2024-03-05T09:13:00Z"}]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(base URL, alice's key, API client as alice, {name: memory id}, the key of bob, who may
    only read alice's dataset)."""
    path = str(tmp_path_factory.mktemp("ui") / "ui.db")
    with running(path) as (kn, base):
        key = add_user(kn, "alice")
        bob = add_user(kn, "bob")
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {key}"}, timeout=30) as api:
            ids = {}
            for name, text, when in [
                ("acme", "Alice works at Acme.", "2020-01-01"),
                ("globex", "Alice works at Globex.", "2023-06-01"),
                ("bob", "Bob lives in Paris. Alice knows Bob.", "2021-01-01"),
                ("tea", "Carol likes tea.", "2022-01-01"),
            ]:
                resp = api.post("/v1/remember", json={"content": text, "dataset": DATASET, "valid_at": when})
                assert resp.status_code == 200, resp.text
                ids[name] = resp.json()["memory_ids"][0]
            resp = api.post("/v1/remember/file", files=[("file", ("travel-policy.md", POLICY.encode()))],
                            data={"dataset": DATASET})
            assert resp.status_code == 200, resp.text
            ids["policy"] = resp.json()["memory_ids"][0]
            resp = api.post("/v1/remember", json={"content": CHAT, "dataset": DATASET, "user": "maya",
                                                  "agent": "kenbot", "session": "offsite-planning"})
            assert resp.status_code == 200, resp.text
            ids["booked"], ids["reply"] = resp.json()["memory_ids"]
            resp = api.post("/v1/remember", json={"dataset": DATASET, "source": "crm-sync", "content": [
                {"source": "Offsite", "relation": "located_in", "target": "Lisbon", "valid_at": "2024-03-08"}]})
            assert resp.status_code == 200, resp.text
            ids["known"] = resp.json()["memory_ids"][0]
            api.put(f"/v1/datasets/{DATASET}/grants/bob", json={"permissions": ["read"]}).raise_for_status()
            yield base, key, api, ids, bob


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield chromium
        chromium.close()


class Watched:
    """A page whose console errors and requests are recorded."""

    def __init__(self, page, base: str) -> None:
        self.page, self.base = page, base
        self.errors: list[str] = []
        self.requests: list[str] = []
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", lambda r: self.requests.append(r.url))

    def open(self, query: str = "", hash_: str = "") -> None:
        sep = "&" if query else ""
        self.page.goto(f"{self.base}/ui?dataset={DATASET}{sep}{query}{hash_}")

    def shot(self, name: str) -> None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

    def assert_clean(self) -> None:
        assert self.errors == []
        outside = [u for u in self.requests if not u.startswith(self.base + "/") and not u.startswith("data:")]
        assert outside == []


@pytest.fixture()
def ui(site, browser):
    base, key = site[:2]
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(f"sessionStorage.setItem('kenning.key', {key!r})")
    watched = Watched(context.new_page(), base)
    yield watched
    context.close()


def test_page_loads_clean_and_offline(ui):
    ui.open()
    ui.page.get_by_label("Query").wait_for()
    assert ui.page.locator("#who").inner_text() == "Signed in as alice"
    assert DATASET in ui.page.locator("#scope-dataset option").all_inner_texts()
    ui.assert_clean()
    assert any(u.endswith("/ui/static/vendor/cytoscape.min.js") for u in ui.requests)


def test_search_shows_hits_with_provenance(ui, site):
    ids = site[3]
    ui.open()
    ui.page.get_by_label("Query").fill("Where does Alice work?")
    ui.page.get_by_role("button", name="Search").click()
    first = ui.page.locator(".hit.fact").first
    first.wait_for()
    assert "q=Where+does+Alice+work" in ui.page.url
    assert first.locator(".hit-text").inner_text() == "Alice works at Globex."
    assert "2023-06-01 → now" in first.locator(".validity").inner_text()
    assert first.locator(f'a[href="#/memory/{ids["globex"]}"]').count() == 1
    assert "graph" in first.locator(".lanes").inner_text()
    ui.shot("search")
    first.locator(f'a[href="#/memory/{ids["globex"]}"]').click()
    ui.page.locator("#memory-title").wait_for()
    assert "Alice works at Globex." in ui.page.locator("pre.content").inner_text()
    assert ui.page.locator("ol.chunks .chunk-text").all_inner_texts() == ["Alice works at Globex."]
    ui.shot("memory")
    ui.assert_clean()


def test_search_says_where_each_hit_comes_from(ui, site):
    ids = site[3]
    ui.open("q=" + quote("Who booked the trains, and where does Alice work?"))
    document = ui.page.locator('.hit[data-label="document"]').first
    document.wait_for()
    fact = ui.page.locator(".hit.fact").first
    assert fact.locator(".hit-text").inner_text() == "Alice works at Globex."
    assert fact.locator(".relation").inner_text() == "works at" and fact.locator(".origin").count() == 0
    assert document.locator(".kind").inner_text().lower() == "document"
    assert document.locator(".origin").inner_text() == "travel-policy.md › Travel policy › Trains"
    text = document.locator(".hit-text")
    assert text.locator("p").first.inner_text().startswith("Book trains for the offsite through the travel portal")
    assert "**" not in text.inner_text() and "##" not in text.inner_text() and "](" not in text.inner_text()
    assert text.locator("li").all_inner_texts() == ["Seat reservations are included.", "Keep every receipt."]
    assert document.locator(f'a[href="#/memory/{ids["policy"]}"]').count() == 1
    message = ui.page.locator('.hit[data-label="message"]', has_text="I booked the trains").first
    assert message.locator(".origin").inner_text() == "maya · 2024-03-05 09:12 UTC · session offsite-planning"
    assert message.locator(".hit-text").inner_text() == "I booked the trains to the offsite for Friday morning."
    assert message.locator(".validity").count() == 0  # its time is when it was said, on the line above
    ui.shot("search-origins")
    ui.assert_clean()


def test_a_known_fact_says_it_was_stated_not_extracted(ui, site):
    ids = site[3]
    ui.open("q=" + quote("Where is the offsite located?"))
    fact = ui.page.locator(".hit.fact", has_text="Offsite located in Lisbon.").first
    fact.wait_for()
    assert fact.locator(".origin").inner_text() == "known fact from crm-sync"
    fact.locator(f'a[href="#/memory/{ids["known"]}"]').click()
    table = ui.page.locator("table.records")
    table.wait_for()
    assert table.locator("tbody td").all_inner_texts() == ["Offsite", "located in", "Lisbon", "2024-03-08", "", ""]
    ui.shot("memory-known")
    ui.assert_clean()


def test_as_of_changes_the_answer(ui):
    ui.open("q=" + quote("Where does Alice work?"))
    first = ui.page.locator(".hit.fact").first
    first.wait_for()
    assert first.locator(".hit-text").inner_text() == "Alice works at Globex."
    ui.page.locator("#scope-as-of").fill("2021-06-01")
    ui.page.locator(".summary", has_text="valid at 2021-06-01").wait_for()
    assert "as_of=2021-06-01" in ui.page.url
    first = ui.page.locator(".hit.fact").first
    assert first.locator(".hit-text").inner_text() == "Alice works at Acme."
    globex = ui.page.locator(".hit.fact", has_text="Alice works at Globex.")
    assert "not valid then" in globex.inner_text()
    ui.shot("search-as-of")
    ui.page.reload()  # the URL alone names the view
    ui.page.locator(".summary", has_text="valid at 2021-06-01").wait_for()
    assert ui.page.locator(".hit.fact").first.locator(".hit-text").inner_text() == "Alice works at Acme."
    ui.assert_clean()


def test_entity_timeline_shows_closed_and_open_facts(ui):
    ui.open(hash_="#/entity/Alice")
    ui.page.locator("#entity-title").wait_for()
    closed = ui.page.locator(".fact.closed")
    assert closed.count() == 1
    assert closed.locator(".statement").inner_text() == "works at Acme"  # relation and value, not the sentence
    assert closed.locator(".bar-label").inner_text() == "works at Acme"
    assert closed.locator("q.sentence").inner_text() == "Alice works at Acme."
    assert "2020-01-01 → 2023-06-01" in closed.locator(".when").inner_text()
    opened = ui.page.locator(".fact.open", has_text="Alice works at Globex.")
    assert "2023-06-01 → now" in opened.locator(".when").inner_text()
    closed.get_by_role("button", name="works at Globex").click()  # superseded → successor
    assert ui.page.evaluate("document.activeElement.className").startswith("fact open")
    assert "Alice works at Globex." in ui.page.evaluate("document.activeElement.innerText")
    ui.shot("entity")
    ui.page.locator("#scope-known-at").fill("2000-01-01")  # before kenning learned any of it
    ui.page.locator(".summary", has_text="0 of 3 facts hold as known at 2000-01-01").wait_for()
    assert ui.page.locator(".facts > .fact.not-then").count() == 3
    ui.assert_clean()


def test_graph_draws_the_neighbourhood(ui):
    ui.open("depth=2", "#/graph/Alice")
    canvas = ui.page.locator("#cy[data-nodes]")
    canvas.wait_for()
    assert canvas.get_attribute("data-nodes") == "Acme|Alice|Bob|Globex|Paris"
    assert ui.page.locator("#cy canvas").count() > 0
    assert ui.page.locator(".edges li").count() == 4
    box = canvas.bounding_box()
    mid = ui.page.evaluate("document.getElementById('cy').cy.edges('[label = \"lives_in\"]').renderedMidpoint()")
    ui.page.mouse.move(box["x"] + mid["x"], box["y"] + mid["y"])
    tip = ui.page.locator(".tip")
    tip.wait_for()
    assert tip.inner_text() == "Bob lives in Paris.\nvalid 2021-01-01 → now"
    ui.shot("graph")
    ui.page.get_by_label("Hops").select_option("1")  # the hops control changes the view and its URL
    ui.page.locator('#cy[data-nodes="Acme|Alice|Bob|Globex"]').wait_for()
    assert "depth=" not in ui.page.url
    pos = ui.page.evaluate("document.getElementById('cy').cy.nodes('[label = \"Globex\"]').renderedPosition()")
    ui.page.mouse.click(box["x"] + pos["x"], box["y"] + pos["y"])  # a node opens its entity page
    ui.page.locator("#entity-title", has_text="Globex").wait_for()
    ui.assert_clean()


def test_forget_from_the_ui_removes_the_memory(ui, site):
    _, _, api, ids, _ = site
    ui.open(hash_=f"#/memory/{ids['tea']}")
    ui.page.get_by_role("button", name="Forget", exact=True).click()
    dialog = ui.page.locator("#confirm-dialog")
    assert "cannot be undone" in dialog.inner_text()
    dialog.get_by_role("button", name="Cancel").click()
    assert api.get(f"/v1/memories/{ids['tea']}").status_code == 200
    ui.page.get_by_role("button", name="Forget", exact=True).click()
    dialog.get_by_role("button", name="Forget", exact=True).click()
    ui.page.locator("#status", has_text=f"Forgot memory {ids['tea']}").wait_for()
    assert api.get(f"/v1/memories/{ids['tea']}").status_code == 404
    ui.page.locator("table.list tbody tr").first.wait_for()  # back on the list, without it
    assert ui.page.locator(f'a[href="#/memory/{ids["tea"]}"]').count() == 0
    ui.assert_clean()


def test_memories_list_filters_and_pins(ui, site):
    _, _, api, ids, _ = site
    ui.open(hash_="#/memories")
    ui.page.locator("table.list tbody tr").first.wait_for()
    ui.page.get_by_label("Pinned").select_option("true")
    ui.page.get_by_role("button", name="Filter").click()
    ui.page.get_by_text("No memories match.").wait_for()
    assert "pinned=true" in ui.page.url
    ui.open(hash_=f"#/memory/{ids['bob']}")
    ui.page.get_by_role("button", name="Pin", exact=True).click()
    ui.page.get_by_role("button", name="Unpin").wait_for()
    assert api.get(f"/v1/memories/{ids['bob']}").json()["pinned"] is True
    ui.page.get_by_role("button", name="Unpin").click()
    ui.page.get_by_role("button", name="Pin", exact=True).wait_for()
    assert api.get(f"/v1/memories/{ids['bob']}").json()["pinned"] is False
    ui.open("status=active", "#/memories")
    ui.page.locator("table.list tbody tr").first.wait_for()
    heads = ui.page.locator("table.list thead th").all_inner_texts()
    assert heads == ["Id", "Kind", "Speaker", "User", "Session", "Status", "Pinned", "Time", "Content"]
    booked = ui.page.locator("table.list tbody tr", has=ui.page.locator(f'a[href="#/memory/{ids["booked"]}"]'))
    cells = booked.locator("td").all_inner_texts()
    assert cells[1:5] == ["message", "maya", "maya", "offsite-planning"]
    assert cells[7] == "2024-03-05 09:12 UTC"  # when it was said, not when it was stored
    reply = ui.page.locator("table.list tbody tr", has=ui.page.locator(f'a[href="#/memory/{ids["reply"]}"]'))
    assert reply.locator("td").all_inner_texts()[2] == "kenbot"
    policy = ui.page.locator("table.list tbody tr", has=ui.page.locator(f'a[href="#/memory/{ids["policy"]}"]'))
    assert policy.locator("td.content .file").inner_text() == "travel-policy.md"
    ui.shot("memories")
    booked.locator("td.session a").click()  # a session filters the list
    ui.page.locator("table.list tbody tr").nth(1).wait_for()
    assert "session=offsite-planning" in ui.page.url
    assert ui.page.locator("table.list tbody tr").count() == 2
    ui.assert_clean()


def test_what_the_api_refuses_is_said(site, browser):
    base, _, api, ids, bob = site
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    context.add_init_script(f"sessionStorage.setItem('kenning.key', {bob!r})")
    page = context.new_page()
    page.goto(f"{base}/ui?dataset={DATASET}#/memory/{ids['bob']}")
    page.get_by_role("button", name="Pin", exact=True).click()
    assert page.locator("#who").inner_text() == "Signed in as bob"
    page.locator("#status", has_text="Could not pin").wait_for()
    assert "no 'write' permission on dataset 'team'" in page.locator("#status").inner_text()
    assert api.get(f"/v1/memories/{ids['bob']}").json()["pinned"] is False
    context.close()


def test_health_shows_counts_and_usage(ui, site):
    stats = site[2].get("/v1/stats", params={"dataset": DATASET}).json()
    ui.open(hash_="#/health")
    row = ui.page.locator("table.counts tbody tr", has_text=DATASET).first
    row.wait_for()
    cells = row.locator("td").all_inner_texts()
    assert cells[:3] == [str(stats["memories"]), "0", "0"]  # memories, pending, failed
    assert ui.page.get_by_text("Chat calls").is_visible()
    ui.shot("health")
    ui.assert_clean()


VIEWS = ["", "#/entity/Alice", "#/graph/Alice", "#/memories", "#/health"]


@pytest.mark.parametrize("width", [1280, 390])
def test_every_view_is_labelled_and_fits(site, browser, width):
    base, key = site[:2]
    context = browser.new_context(viewport={"width": width, "height": 800})
    context.add_init_script(f"sessionStorage.setItem('kenning.key', {key!r})")
    page = context.new_page()
    for view in VIEWS:
        page.goto(f"{base}/ui?dataset={DATASET}&q=Alice{view}")
        page.locator("main:not([aria-busy]) h1").wait_for()
        unlabelled = page.evaluate("""[...document.querySelectorAll('input, select, button')]
            .filter(e => e.offsetParent !== null)
            .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label') && !e.innerText.trim())
            .map(e => e.outerHTML)""")
        assert unlabelled == [], view
        assert page.evaluate("document.documentElement.scrollWidth") <= width, view
        if width < 500:
            page.screenshot(path=str(SHOTS / f"phone-{view.split('/')[1] if view else 'search'}.png"), full_page=True)
    page.goto(f"{base}/ui?dataset={DATASET}")  # the keyboard reaches the query from the top
    page.get_by_label("Query").wait_for()
    for _ in range(30):  # a date control takes a stop per part
        page.keyboard.press("Tab")
        if page.evaluate("document.activeElement.name") == "q":
            break
    assert page.evaluate("document.activeElement.name") == "q"
    context.close()


def test_wrong_key_shows_a_clear_message(site, browser):
    base, key = site[:2]
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    page.goto(f"{base}/ui?dataset={DATASET}")
    dialog = page.locator("#key-dialog")
    page.get_by_label("Key", exact=True).fill("kn_not_a_real_key")
    page.get_by_role("button", name="Use key").click()
    message = page.locator("#key-error")
    message.filter(has_text="refused").wait_for()
    assert "The server refused this key (invalid or revoked API key)" in message.inner_text()
    assert dialog.is_visible()
    page.get_by_label("Key", exact=True).fill(key)
    page.get_by_role("button", name="Use key").click()
    page.get_by_label("Query").wait_for()
    assert page.evaluate("sessionStorage.getItem('kenning.key')") == key
    page.get_by_label("Query").fill("Where does Alice work?")
    page.keyboard.press("Enter")
    page.locator(".hit").first.wait_for()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "search-phone.png"), full_page=True)
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing overflows a phone-width window
    context.close()
