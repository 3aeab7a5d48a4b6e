"""Progress: rich bars on a terminal; plain periodic log lines otherwise (a log file, CI, nohup).

A log line per task every `interval_s` (and when a task finishes), e.g.
`[12:03:04] solve: 120/600 (20%) · 3.2 rec/s · 5 dropped · 1m40s elapsed · eta 6m40s`. A ticker
thread prints them even while one long shard is running, so a slow stage is never silent.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass, field
from typing import TextIO

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

LOG_INTERVAL_S = 30.0


class RateColumn(ProgressColumn):
    def render(self, task) -> Text:
        speed = task.finished_speed or task.speed
        return Text(f"{speed:,.0f} rec/s" if speed else "- rec/s", style="cyan")


def _duration(s: float) -> str:
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


@dataclass
class _LogTask:
    name: str
    total: int | None
    start: float
    done: int = 0
    resumed: int = 0  # committed by an earlier run: not part of this run's rate
    drops: int = 0
    finished: bool = False
    last: float = field(default=0.0)

    def line(self, now: float) -> str:
        elapsed = now - self.start
        fresh = self.done - self.resumed
        rate = fresh / elapsed if elapsed > 0 else 0.0
        parts = [f"{self.done:,}/{self.total:,} ({100 * self.done / self.total:.0f}%)" if self.total else f"{self.done:,}"]
        parts += [f"{rate:,.1f} rec/s" if fresh else "- rec/s", f"{self.drops:,} dropped", f"{_duration(elapsed)} elapsed"]
        if self.total and fresh and not self.finished:
            parts.append(f"eta {_duration((self.total - self.done) / rate)}")
        if self.finished:
            parts.append("done")
        return f"[{time.strftime('%H:%M:%S')}] {self.name}: " + " · ".join(parts)


class Progress:
    """What the engine reports progress to. `enabled`: bars on a terminal, log lines when the
    stream is not one; False: nothing (tests, --quiet)."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None, interval_s: float = LOG_INTERVAL_S):
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.log = enabled and not self.stream.isatty()
        self.interval_s = interval_s
        self._p = None
        self._drops: dict[int, int] = {}
        self._tasks: list[_LogTask] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    def __enter__(self) -> Progress:
        if self.log:
            self._ticker = threading.Thread(target=self._tick, name="rlclimb-progress", daemon=True)
            self._ticker.start()
        elif self.enabled:
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
        if self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._finish_all()

    def task(self, name: str, total: int | None) -> int:
        if self.log:
            self._finish_all()  # segments run one after another: a new task ends the last
            with self._lock:
                self._tasks.append(_LogTask(name, total, time.monotonic()))
                print(f"[{time.strftime('%H:%M:%S')}] {name}: started" + (f", {total:,} items" if total else ""),
                      file=self.stream, flush=True)
                self._tasks[-1].last = time.monotonic()
                return len(self._tasks) - 1
        if self._p is None:
            return 0
        task_id = self._p.add_task(name, total=total, drops=0)
        self._drops[task_id] = 0
        return task_id

    def advance(self, task_id: int, n: int, drops: int, resumed: bool = False) -> None:
        if self.log:
            with self._lock:
                t = self._tasks[task_id]
                t.done += n
                t.resumed += n if resumed else 0
                t.drops += drops
                if t.total is not None and t.done >= t.total:
                    t.finished = True
                    self._print(t)
            return
        if self._p is None:
            return
        self._drops[task_id] += drops
        self._p.update(task_id, advance=n, drops=self._drops[task_id])

    def _print(self, t: _LogTask) -> None:
        t.last = time.monotonic()
        print(t.line(t.last), file=self.stream, flush=True)

    def _finish_all(self) -> None:
        with self._lock:
            for t in self._tasks:
                if not t.finished:
                    t.finished = True
                    self._print(t)

    def _tick(self) -> None:
        while not self._stop.wait(min(self.interval_s, 1.0)):
            now = time.monotonic()
            with self._lock:
                for t in self._tasks:
                    if not t.finished and now - t.last >= self.interval_s:
                        self._print(t)
