"""Async mode: rollout workers keep generating while the learner trains.

A request is one step's batch (prompts_per_step prompts, with their early-exit rounds: the
sampler needs the whole batch to fill it), and it is admitted under AReaL's staleness control:
with N_r the prompts admitted so far (dropped ones given back) counting this request's first,
B = prompts_per_step and i the learner steps done, a request is admitted only if
floor((N_r - 1) / B) <= i + eta. So a batch is generated from weights at most eta steps older
than the step that trains on it; eta = 0 is synchronous training run in another thread (the
same draws from the same weights, in the same order: metrics.jsonl is identical).

Finished batches wait in a buffer; the learner takes the oldest (lowest policy version, then
admission order) and uses each once. A batch whose oldest sample is more than eta learner steps
behind when it would be trained on (several workers finishing out of order, a slow episode) is
dropped and counted, and its prompts given back to admission. The learner's waits for data are
its idle time. Weight pushes wait for in-flight generation calls (see engines.base.Engine)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

from .sampler import Draw, sample_groups


class AsyncRollouts:
    def __init__(self, trainer, eta: int, workers: int = 1):
        self.trainer, self.eta, self.workers = trainer, eta, workers
        self.batch = trainer.cfg.prompts_per_step
        self.cond = threading.Condition()
        self.buffer: list[tuple[int, Draw]] = []
        self.base = trainer.step_no  # requests before this process (a resumed run)
        self.admitted = 0
        self.dropped = 0
        self.dropped_samples = 0
        self.learner_step = trainer.step_no
        self.step_of_version = {trainer.policy_version: trainer.step_no}
        self.stopping = False
        self.error: BaseException | None = None
        self.threads: list[threading.Thread] = []

    # ---- admission -------------------------------------------------------------------------
    def live(self) -> int:
        """Requests admitted and not dropped (consumed, buffered or in flight)."""
        return self.base + self.admitted - self.dropped

    def admissible(self) -> bool:
        n_r = self.live() * self.batch + 1  # this request's first prompt
        return (n_r - 1) // self.batch <= self.learner_step + self.eta

    def start(self) -> None:
        for k in range(self.workers):
            t = threading.Thread(target=self._work, name=f"rl-rollout-{k}", daemon=True)
            t.start()
            self.threads.append(t)

    def _work(self) -> None:
        trainer = self.trainer
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.stopping or self.admissible())
                if self.stopping:
                    return
                index = self.live()
                self.admitted += 1
                # the step this batch is for (curriculum; with several workers, the newest's)
                trainer.sampler.step = index
            try:
                draw = self.draw(index)
            except BaseException as e:  # surfaced in the learner, which stops the run
                with self.cond:
                    self.error = e
                    self.cond.notify_all()
                return
            with self.cond:
                self.buffer.append((index, draw))
                self.cond.notify_all()

    def draw(self, index: int) -> Draw:
        """One admitted request: a step's batch, exactly as synchronous training samples it."""
        t = self.trainer
        return sample_groups(t.sampler, t.cfg, t.rollout, t.score)

    # ---- the learner's side ------------------------------------------------------------------
    def staleness(self, draw: Draw) -> int:
        if not draw.samples:
            return 0
        oldest = min(self.step_of_version.get(s.policy_version, 0) for s in draw.samples)
        return self.learner_step - oldest

    def next_draw(self) -> tuple[Draw, dict[str, Any]]:
        t0 = time.perf_counter()
        with self.cond:
            while True:
                if self.error is not None:
                    raise RuntimeError(f"rollout worker failed: {self.error}") from self.error
                for entry in [e for e in self.buffer if self.staleness(e[1]) > self.eta]:
                    self.buffer.remove(entry)
                    self.dropped += 1
                    self.dropped_samples += len(entry[1].samples)
                    self.cond.notify_all()  # its prompts go back to admission
                if self.buffer:
                    entry = min(
                        self.buffer,
                        key=lambda e: (min((s.policy_version for s in e[1].samples), default=0), e[0]),
                    )
                    self.buffer.remove(entry)
                    break
                self.cond.wait(timeout=1.0)
            draw = entry[1]
            hist = Counter(
                self.learner_step - self.step_of_version.get(s.policy_version, 0)
                for g in draw.groups
                for s in g.samples
            )
            stats = {
                "async/admitted": self.base + self.admitted,
                "async/dropped": self.dropped,
                "async/dropped_samples": self.dropped_samples,
                "async/buffered": len(self.buffer),
                "staleness/hist": {str(k): hist[k] for k in sorted(hist)},
                "staleness/max": max(hist, default=0),
            }
        return draw, {**stats, "time/idle": time.perf_counter() - t0}

    def pushed(self, step: int, version: int) -> None:
        """The learner finished `step` and the engine now samples with `version`'s weights."""
        with self.cond:
            self.learner_step = step
            self.step_of_version[version] = step
            self.cond.notify_all()

    def stop(self) -> None:
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        for t in self.threads:
            t.join()
