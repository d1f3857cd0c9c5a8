"""The fake browser: seeded faker pages with multi-KB accessibility snapshots, tabs, navigation, stale elements.

Element indices come from the latest snapshot of the current page load: after a navigation they are stale
until the next `browser_snapshot` (the click error says so, as Spacebot's fixed message does). A page with
`ready_after: N` shows `status "Loading… P%"` (or, with `progress: false`, the same loading snapshot every
time) and no interactive elements until its N-th snapshot.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, final

from pytest_loopguard.core._limits import MAX_GENERATED_CHARS, MAX_SCENARIO_COUNT
from pytest_loopguard.core._model import ToolCall, ToolResult
from pytest_loopguard.errors import ScenarioError, brief, needs_extra

from .protocols import is_count

__all__ = ["BROWSER_TOOLS", "Element", "FakeBrowser", "Page", "parse_pages"]

BROWSER_TOOLS: Final = (
    "browser_navigate", "browser_snapshot", "browser_click", "browser_type", "browser_back",
    "browser_tab_list", "browser_tab_new", "browser_tab_switch", "browser_tab_close",
)
STALE_HINT: Final = "Run browser_snapshot to get the current interactive elements and their indices."


@final
@dataclass(frozen=True, slots=True)
class Element:
    """An interactive element; a link's `href` navigates when clicked."""

    index: int
    role: str
    name: str
    href: str | None = None


@final
@dataclass(frozen=True, slots=True)
class Page:
    url: str
    title: str
    elements: tuple[Element, ...] = ()
    ready_after: int = 0  # the snapshot (1-based) from which the page shows ready; 0: at once
    snapshot_chars: int = 3000  # approximate size of the ready snapshot
    progress: bool = True  # a loading page shows its progress, so consecutive snapshots differ


@dataclass(slots=True)
class _Tab:
    url: str | None = None
    history: list[str] = field(default_factory=list)
    load: int = 0  # navigations so far: element indices belong to one load
    snapshot_load: int | None = None  # the load the latest snapshot was taken of
    polls: int = 0  # snapshots of the current load
    clicks: int = 0  # clicks and typing on the current load: the page's state changes with them


_PAGE_KEYS: Final = ("title", "elements", "ready_after", "snapshot_chars", "progress")
_ELEMENT_KEYS: Final = ("index", "role", "name", "href")


def parse_pages(raw: Any, field: str = "env.browser.pages") -> dict[str, Page]:
    """Pages from `{url: {title, ready_after, snapshot_chars, elements: [{index, role, name, href}]}}`.

    Every `href` must name a defined page (ScenarioError otherwise).
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError("expected a mapping {url: page}", field=field)
    pages: dict[str, Page] = {}
    for url, spec in raw.items():
        where = f"{field}.{url}"
        if not isinstance(url, str) or not url:
            raise ScenarioError("a page is keyed by its URL", field=field)
        spec = spec or {}
        if not isinstance(spec, Mapping):
            raise ScenarioError("expected a mapping {title, elements, ready_after, snapshot_chars}", field=where)
        unknown = set(spec) - set(_PAGE_KEYS)
        if unknown:
            raise ScenarioError(f"unknown key(s) {brief(sorted(map(str, unknown)))}; expected {', '.join(_PAGE_KEYS)}",
                                field=where)
        elements = []
        raw_elements = spec.get("elements") or []
        if not isinstance(raw_elements, list) or len(raw_elements) > MAX_SCENARIO_COUNT:
            raise ScenarioError(f"expected a list of at most {MAX_SCENARIO_COUNT} elements", field=f"{where}.elements")
        for i, e in enumerate(raw_elements):
            ewhere = f"{where}.elements[{i}]"
            if not isinstance(e, Mapping) or set(e) - set(_ELEMENT_KEYS):
                raise ScenarioError(f"expected a mapping with {', '.join(_ELEMENT_KEYS)}", field=ewhere)
            index = e.get("index", i + 1)
            if isinstance(index, bool) or not isinstance(index, int):
                raise ScenarioError("expected an integer index", field=f"{ewhere}.index")
            href = e.get("href")
            elements.append(Element(index, str(e.get("role", "link" if href else "button")),
                                    str(e.get("name", f"Element {index}")), None if href is None else str(href)))
        counts = []
        limits = (("ready_after", 0, MAX_SCENARIO_COUNT), ("snapshot_chars", 3000, MAX_GENERATED_CHARS))
        for key, default, top in limits:
            n = spec.get(key, default)
            if not is_count(n, 0, top):
                raise ScenarioError(f"expected an integer ≥ 0 and ≤ {top}", field=f"{where}.{key}")
            counts.append(n)
        progress = spec.get("progress", True)
        if not isinstance(progress, bool):
            raise ScenarioError("expected true or false", field=f"{where}.progress")
        pages[url] = Page(url, str(spec.get("title", url)), tuple(elements), counts[0], counts[1], progress)
    for url, page in pages.items():
        for i, e in enumerate(page.elements):
            if e.href is not None and e.href not in pages:
                raise ScenarioError(f"links to {brief(e.href)}, which is not a defined page",
                                    field=f"{field}.{url}.elements[{i}].href")
    return pages


@final
class FakeBrowser:
    """A browser over defined pages; answers `browser_*` tool calls with results worded like real tools."""

    def __init__(self, pages: Mapping[str, Page] | Mapping[str, Any], *, start: str | None = None,
                 seed: int = 0) -> None:
        self.pages: dict[str, Page] = (
            dict(pages) if all(isinstance(p, Page) for p in pages.values()) else parse_pages(pages, "pages")
        )
        if start is not None and start not in self.pages:
            raise ScenarioError(f"start page {brief(start)} is not a defined page", field="start")
        self.seed = seed
        self.tabs: list[_Tab] = [_Tab()]
        self.active = 0
        self.snapshots = 0  # snapshots served, all tabs
        self._filler: dict[str, str] = {}
        self._faker: Any = None
        if start is not None:
            self._load(self.tabs[0], start)

    # ---- the tools -------------------------------------------------------------------------------------
    def execute(self, call: ToolCall) -> ToolResult:
        a = call.args
        tool = call.tool
        if tool == "browser_navigate":
            return self.navigate(str(a.get("url", "")))
        if tool == "browser_snapshot":
            return self.snapshot()
        if tool == "browser_click":
            return self.click(a.get("index"))
        if tool == "browser_type":
            return self.type(a.get("index"), str(a.get("text", "")))
        if tool == "browser_back":
            return self.back()
        if tool == "browser_tab_list":
            return self.tab_list()
        if tool == "browser_tab_new":
            return self.tab_new(a.get("url"))
        if tool == "browser_tab_switch":
            return self.tab_switch(a.get("tab"))
        if tool == "browser_tab_close":
            return self.tab_close(a.get("tab"))
        return ToolResult.failure(f"Unknown browser tool: {tool}")

    @property
    def tab(self) -> _Tab:
        return self.tabs[self.active]

    @property
    def url(self) -> str | None:
        return self.tab.url

    def navigate(self, url: str) -> ToolResult:
        page = self.pages.get(url)
        if page is None:
            return ToolResult.failure(f"net::ERR_NAME_NOT_RESOLVED at {url}")
        self._load(self.tab, url)
        return ToolResult(text=f"Navigated to {url} ({page.title}). Run browser_snapshot to see the page.")

    def back(self) -> ToolResult:
        tab = self.tab
        if len(tab.history) < 2:
            return ToolResult.failure("Cannot go back: no previous page in this tab.")
        tab.history.pop()
        url = tab.history.pop()
        self._load(tab, url)
        return ToolResult(text=f"Went back to {url} ({self.pages[url].title}).")

    def snapshot(self) -> ToolResult:
        tab = self.tab
        if tab.url is None:
            return ToolResult.failure("No page is open in this tab. Run browser_navigate first.")
        tab.polls += 1
        tab.snapshot_load = tab.load
        self.snapshots += 1
        page = self.pages[tab.url]
        lines = [f'- RootWebArea "{page.title}" [url={page.url}]']
        if self._ready(tab, page):
            lines.append('  - status "Ready"')
            lines.extend(f'  - {e.role} "{e.name}" [index={e.index}]' for e in page.elements)
            if tab.clicks:
                lines.append(f'  - log "{tab.clicks} interactions so far"')
        elif page.progress:
            lines.append(f'  - status "Loading… {100 * tab.polls // page.ready_after}%" [busy]')
        else:
            lines.append('  - status "Loading…" [busy]')
        lines.append(self._page_filler(page))
        return ToolResult(text="\n".join(lines))

    def click(self, index: Any) -> ToolResult:
        found = self._element(index, "click")
        if isinstance(found, ToolResult):
            return found
        if found.href is not None:
            self._load(self.tab, found.href)
            return ToolResult(text=f"Clicked {found.role} '{found.name}'; navigated to {found.href}.")
        self.tab.clicks += 1
        return ToolResult(text=f"Clicked {found.role} '{found.name}' (interaction {self.tab.clicks} on this page).")

    def type(self, index: Any, text: str) -> ToolResult:
        found = self._element(index, "type into")
        if isinstance(found, ToolResult):
            return found
        self.tab.clicks += 1
        return ToolResult(text=f"Typed '{text}' into {found.role} '{found.name}' "
                               f"(interaction {self.tab.clicks} on this page).")

    def tab_list(self) -> ToolResult:
        lines = []
        for i, tab in enumerate(self.tabs):
            mark = "*" if i == self.active else " "
            title = self.pages[tab.url].title if tab.url else "New Tab"
            lines.append(f"[{i}]{mark} {title} — {tab.url or 'about:blank'}")
        return ToolResult(text="\n".join(lines))

    def tab_new(self, url: Any = None) -> ToolResult:
        if url is not None and str(url) not in self.pages:
            return ToolResult.failure(f"net::ERR_NAME_NOT_RESOLVED at {url}")
        self.tabs.append(_Tab())
        self.active = len(self.tabs) - 1
        if url is not None:
            self._load(self.tab, str(url))
        return ToolResult(text=f"Opened tab [{self.active}] {url or 'about:blank'}.")

    def tab_switch(self, tab: Any) -> ToolResult:
        if isinstance(tab, bool) or not isinstance(tab, int) or not 0 <= tab < len(self.tabs):
            return ToolResult.failure(f"No tab [{tab}]. Run browser_tab_list to see the open tabs.")
        self.active = tab
        return ToolResult(text=f"Switched to tab [{tab}] {self.tab.url or 'about:blank'}.")

    def tab_close(self, tab: Any) -> ToolResult:
        if isinstance(tab, bool) or not isinstance(tab, int) or not 0 <= tab < len(self.tabs) or len(self.tabs) == 1:
            return ToolResult.failure(f"Cannot close tab [{tab}].")
        del self.tabs[tab]
        self.active = min(self.active, len(self.tabs) - 1)
        return ToolResult(text=f"Closed tab [{tab}].")

    # ---- internals -------------------------------------------------------------------------------------
    @staticmethod
    def _ready(tab: _Tab, page: Page) -> bool:
        return tab.polls >= page.ready_after

    def _load(self, tab: _Tab, url: str) -> None:
        tab.url = url
        tab.history.append(url)
        tab.load += 1
        tab.polls = 0
        tab.clicks = 0

    def _element(self, index: Any, verb: str) -> Element | ToolResult:
        tab = self.tab
        if tab.url is None:
            return ToolResult.failure("No page is open in this tab. Run browser_navigate first.")
        if tab.snapshot_load != tab.load:
            return ToolResult.failure(
                f"Failed to {verb} element [{index}]: the element is stale (it may have been removed from the DOM "
                f"after the page changed). {STALE_HINT}"
            )
        page = self.pages[tab.url]
        if self._ready(tab, page):
            for e in page.elements:
                if e.index == index:
                    return e
        return ToolResult.failure(f"Failed to {verb} element [{index}]: no element with that index on the page. "
                                  f"{STALE_HINT}")

    def _page_filler(self, page: Page) -> str:
        """The page's static content: faker text seeded by (seed, url), generated once per page."""
        text = self._filler.get(page.url)
        if text is None:
            if self._faker is None:
                with needs_extra("a simulated browser page"):  # faker comes with the `pytest` extra
                    from faker import Faker  # imported on first use: building a Faker costs ~40 ms

                self._faker = Faker("en_US")
            fake = self._faker
            fake.seed_instance(zlib.crc32(f"{self.seed}:{page.url}".encode()))
            lines = ['  - navigation "Main"']
            lines.extend(f'    - link "{fake.company()}"' for _ in range(4))
            lines.append(f'  - heading "{fake.catch_phrase()}" [level=1]')
            size = sum(len(line) for line in lines)
            while size < page.snapshot_chars:
                line = (f'  - heading "{fake.catch_phrase()}" [level=2]' if len(lines) % 5 == 0
                        else f'  - paragraph "{fake.paragraph(nb_sentences=4)}"')
                lines.append(line)
                size += len(line) + 1
            text = "\n".join(lines)
            self._filler[page.url] = text
        return text
