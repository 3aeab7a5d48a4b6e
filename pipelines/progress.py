"""Progress bars (rich): records/s, ETA and drops per segment."""

from __future__ import annotations

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text


class RateColumn(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} rec/s" if speed else "- rec/s", style="cyan")


class Progress:
    """A thin wrapper so the engine can run with bars off (tests, --quiet, non-terminals)."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._p = None
        self._drops: dict[int, int] = {}

    def __enter__(self) -> Progress:
        if self.enabled:
            self._p = RichProgress(
                SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
                MofNCompleteColumn(), RateColumn(), TextColumn("[red]{task.fields[drops]:,} dropped"),
                TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), transient=False,
            )
            self._p.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._p is not None:
            self._p.__exit__(*exc)

    def task(self, name: str, total: int | None) -> int:
        if self._p is None:
            return 0
        task_id = self._p.add_task(name, total=total, drops=0)
        self._drops[task_id] = 0
        return task_id

    def advance(self, task_id: int, n: int, drops: int, resumed: bool = False) -> None:
        if self._p is None:
            return
        self._drops[task_id] += drops
        self._p.update(task_id, advance=n, drops=self._drops[task_id])
