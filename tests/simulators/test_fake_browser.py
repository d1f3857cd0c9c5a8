"""FakeBrowser: seeded multi-KB snapshots, readiness after N polls, stale elements after navigation, tabs."""

from __future__ import annotations

import pytest

from loopguard_simulators import FakeBrowser
from loopguard_simulators.browser import parse_pages
from pytest_loopguard.core._model import ToolCall
from pytest_loopguard.errors import ScenarioError

SHOP = "https://shop.example/lamps"
LAMP = "https://shop.example/lamps/brass"
PAGES = {
    SHOP: {"title": "Lamps", "ready_after": 3, "snapshot_chars": 3000,
           "elements": [{"index": 1, "role": "link", "name": "Brass lamp", "href": LAMP}]},
    LAMP: {"title": "Brass lamp", "elements": [{"index": 4, "role": "button", "name": "Add to cart"}]},
}


def browser(seed: int = 0) -> FakeBrowser:
    return FakeBrowser(PAGES, start=SHOP, seed=seed)


def test_snapshots_are_multi_kilobyte_accessibility_trees() -> None:
    text = browser().snapshot().text
    assert text is not None
    assert len(text) >= 3000
    assert text.startswith(f'- RootWebArea "Lamps" [url={SHOP}]')
    assert '  - paragraph "' in text


def test_a_page_becomes_ready_at_its_nth_snapshot_and_shows_progress_until_then() -> None:
    b = browser()
    first, second, third = (b.snapshot().text or "" for _ in range(3))
    assert 'status "Loading… 33%"' in first and "[index=1]" not in first
    assert 'status "Loading… 66%"' in second
    assert 'status "Ready"' in third and 'link "Brass lamp" [index=1]' in third


def test_a_static_loading_page_gives_the_same_snapshot_until_ready() -> None:
    b = FakeBrowser({SHOP: {"ready_after": 3, "progress": False}}, start=SHOP)
    assert b.snapshot().text == b.snapshot().text


def test_clicking_before_any_snapshot_of_the_page_is_stale() -> None:
    result = browser().click(1)
    assert not result.ok and result.error is not None
    assert "stale" in result.error and "Run browser_snapshot" in result.error


def test_elements_go_stale_after_navigation_until_the_next_snapshot() -> None:
    b = browser()
    for _ in range(3):
        b.snapshot()
    assert b.click(1).text == f"Clicked link 'Brass lamp'; navigated to {LAMP}."
    assert b.url == LAMP
    stale = b.click(4)
    assert not stale.ok and "stale" in (stale.error or "")
    b.snapshot()
    assert (b.click(4).text or "").startswith("Clicked button 'Add to cart'")


def test_a_missing_index_says_so_and_points_at_browser_snapshot() -> None:
    b = FakeBrowser(PAGES, start=LAMP)
    b.snapshot()
    error = b.click(99).error or ""
    assert "no element with that index" in error and "browser_snapshot" in error


def test_interactions_change_the_page() -> None:
    b = FakeBrowser(PAGES, start=LAMP)
    before = b.snapshot().text
    b.click(4)
    after = b.snapshot().text or ""
    assert before != after and 'log "1 interactions so far"' in after


def test_navigation_to_an_undefined_page_is_a_network_error() -> None:
    assert browser().navigate("https://nowhere.example").error == "net::ERR_NAME_NOT_RESOLVED at https://nowhere.example"


def test_back_returns_to_the_previous_page() -> None:
    b = browser()
    b.navigate(LAMP)
    assert b.back().ok and b.url == SHOP
    assert not b.back().ok


def test_tabs() -> None:
    b = browser()
    assert b.execute(ToolCall.of("browser_tab_new", {"url": LAMP})).ok
    listing = b.execute(ToolCall.of("browser_tab_list")).text or ""
    assert listing.splitlines() == [f"[0]  Lamps — {SHOP}", f"[1]* Brass lamp — {LAMP}"]
    assert b.execute(ToolCall.of("browser_tab_switch", {"tab": 0})).ok and b.url == SHOP
    assert not b.execute(ToolCall.of("browser_tab_switch", {"tab": 5})).ok
    assert b.execute(ToolCall.of("browser_tab_close", {"tab": 1})).ok and len(b.tabs) == 1
    assert not b.execute(ToolCall.of("browser_tab_close", {"tab": 0})).ok  # the last tab stays


def test_pages_are_deterministic_per_seed() -> None:
    assert browser(1).snapshot().text == browser(1).snapshot().text
    assert browser(1).snapshot().text != browser(2).snapshot().text


def test_execute_routes_tools_and_rejects_unknown_ones() -> None:
    b = browser()
    assert b.execute(ToolCall.of("browser_navigate", {"url": LAMP})).ok
    assert b.execute(ToolCall.of("browser_fly")).error == "Unknown browser tool: browser_fly"


@pytest.mark.parametrize(
    ("pages", "field"),
    [
        ({SHOP: {"elements": [{"index": 1, "href": "https://missing.example"}]}},
         f"env.browser.pages.{SHOP}.elements[0].href"),
        ({SHOP: {"colour": "red"}}, f"env.browser.pages.{SHOP}"),
        ({SHOP: {"ready_after": -1}}, f"env.browser.pages.{SHOP}.ready_after"),
        ([], "env.browser.pages"),
    ],
)
def test_bad_pages_are_scenario_errors(pages: object, field: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_pages(pages)
    assert err.value.field == field


def test_an_undefined_start_page_is_a_scenario_error() -> None:
    with pytest.raises(ScenarioError, match="not a defined page"):
        FakeBrowser(PAGES, start="https://missing.example")
