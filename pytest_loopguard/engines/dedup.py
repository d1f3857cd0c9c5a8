"""dedup: stale results of polling tools replaced by a placeholder in the prompt view (seed 000).

Before every model call, every result of a `tools` tool except the most recent one per tool name is
replaced in the prompt view by a one-line placeholder naming the tool; the call/result structure stays
(the entry keeps its role, tool, call id and turn). Several results in one turn are handled one by one.
The transcript is never touched: the review of seed 000 found that deduplicating the history in place
lost the data the run record was meant to keep.

Work per model call is proportional to the entries appended since the previous call: the engine
remembers how far it has scanned the view and the index of the latest full result per tool, so each
result is replaced exactly once (when a newer one of its tool arrives). A compaction rewrites the view,
so after one the next call rescans it once.

Verdict: an `allow` verdict `dedup.superseded` with data `{replaced: n, tools: [...]}` on the model
call where something was replaced; nothing when nothing was (a silent call keeps timelines readable).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..core._model import Action, Verdict
from ..core.hookspecs import hookimpl
from .base import Engine
from .settings.dedup import Settings

if TYPE_CHECKING:
    from ..core._conversation import PromptView
    from ..core._model import LLMCall
    from ..core._runcontext import RunContext

__all__ = ["ENGINE", "Dedup", "Settings"]



DedupSettings = Settings  # the class attribute `Settings` below shadows the name inside the class


class Dedup(Engine[DedupSettings]):
    """Keeps one full result per polling tool in the prompt view."""

    name = "dedup"
    Settings = Settings
    # Every reason code this engine's verdicts carry (rule coverage lists the ones no trace exercises).
    REASONS = (
        "dedup.superseded",
    )

    def __init__(self, settings: DedupSettings, run: RunContext) -> None:
        super().__init__(settings, run)
        self._tools = frozenset(settings.tools)
        self._latest: dict[str, int] = {}  # tool -> view index of its most recent (full) result
        self._scanned = 0  # view entries before this index have been looked at
        self._placeholders: dict[str, str] = {}  # tool -> its placeholder text, formatted once

    @hookimpl
    def loopguard_before_llm(self, llm: LLMCall, view: PromptView) -> Verdict | None:
        # the hook's full argument list, in its order: the Guard then calls this method directly
        # the view answers its size and its polling tools' results without building its entries: only a
        # replacement needs them
        n = view.size()
        if n < self._scanned:  # the view shrank without a compaction notice: start over
            self._forget()
        if n == self._scanned:
            return None
        latest = self._latest
        replaced: dict[str, int] = {}
        for i, tool in view.tool_results(self._scanned, self._tools):
            previous = latest.get(tool)
            if previous is not None:
                old = view.entry_at(previous)
                if not old.replaced:
                    view.replace(previous, old.with_text(self._placeholder(tool)))
                    replaced[tool] = replaced.get(tool, 0) + 1
            latest[tool] = i
        self._scanned = n
        if not replaced:
            return None
        count = sum(replaced.values())
        names = sorted(replaced)
        return Verdict(
            self.name,
            Action.ALLOW,
            "dedup.superseded",
            f"Replaced {count} superseded result(s) of {', '.join(names)} with a placeholder in the prompt.",
            {"replaced": count, "tools": names},
        )

    def _placeholder(self, tool: str) -> str:
        text = self._placeholders.get(tool)
        if text is None:
            text = self._placeholders[tool] = self.settings.placeholder.format(tool=tool)
        return text

    @hookimpl
    def loopguard_compacted(self) -> None:
        # compaction rebuilt the view: indices are stale, rescan it once on the next model call
        self._forget()

    def _forget(self) -> None:
        self._latest = {}
        self._scanned = 0


ENGINE = Dedup
