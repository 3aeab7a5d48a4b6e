"""Async rollouts (rl/async_rollout.py) on a real tiny model: eta = 0 is synchronous training
exactly; admission holds the workers back when the learner is slow; batches that come back
too stale are dropped and counted; the proximal option."""

import json
import threading
import time

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.rl_agentic import CapitalEnv, config, items, tiny, tokenizer_or_skip  # noqa: E402

from rlclimb.rl.async_rollout import AsyncRollouts  # noqa: E402
from rlclimb.rl.trainer import Trainer  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return tokenizer_or_skip()


def make(tokenizer, out, **overrides):
    return Trainer(config(**overrides), tiny(tokenizer), tokenizer, items(), out,
                   environments={"math": CapitalEnv()})


TIMING = ("time/", "tokens_per_s", "gen_tokens_per_s")


def metrics(path):
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(TIMING)} for r in rows]


def wait_for(condition, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


@pytest.mark.slow
def test_eta_zero_is_synchronous_training(tokenizer, tmp_path):
    opts = dict(steps=4, minibatches=2, eval_items=2, eval_every=2, log_rollouts=True,
                top_p=0.9, group_size=4, early_group_size=2, early_pass_range=(0.0, 1.0))
    sync = make(tokenizer, tmp_path / "sync", **opts)
    sync.train()
    asyn = make(tokenizer, tmp_path / "async", async_eta=0, **opts)
    asyn.train()
    a, b = metrics(tmp_path / "sync" / "metrics.jsonl"), metrics(tmp_path / "async" / "metrics.jsonl")
    assert [r["step"] for r in b] == [0, 1, 2, 3, 4]
    assert a == b
    assert (tmp_path / "sync" / "rollouts.jsonl").read_text() == (
        tmp_path / "async" / "rollouts.jsonl"
    ).read_text()
    for p, q in zip(sync.model.parameters(), asyn.model.parameters(), strict=True):
        assert torch.equal(p, q)
    assert all(r["staleness/max"] == 0 and r["async/dropped"] == 0 for r in b[1:])
    # the async engine sampled from its own copy of the weights, kept in step by pushes
    assert asyn.engine.model is not asyn.model and sync.engine.model is sync.model


def test_admission_holds_workers_behind_a_slow_learner(tokenizer, tmp_path):
    eta = 1
    trainer = make(tokenizer, tmp_path, steps=4, async_eta=eta)
    learn = trainer.learn
    seen = []

    def slow_learn(groups):
        """Stall until the workers have taken every request admission allows, then check that
        they get no further while the learner is stalled."""
        ctl = trainer.async_rollouts
        step = trainer.step_no
        allowed = step + eta + 1  # requests 0 .. step + eta
        wait_for(lambda: ctl.admitted == allowed and len(ctl.buffer) == eta, "admissions")
        time.sleep(0.5)  # a worker that ignored admission would start another batch here
        with ctl.cond:
            seen.append((step, ctl.admitted, len(ctl.buffer)))
        return learn(groups)

    trainer.learn = slow_learn
    rows = trainer.train()
    assert seen == [(s, s + eta + 1, eta) for s in range(4)]
    # batch k >= 1 was sampled while the learner was stalled in step k - 1: one step stale
    assert [r["staleness/max"] for r in rows] == [0, 1, 1, 1]
    assert all(r["staleness/hist"] == {"1": 8} for r in rows[1:])
    assert all(r["async/dropped"] == 0 for r in rows)
    assert all(r["time/idle"] >= 0 for r in rows)


def test_batches_beyond_the_bound_are_dropped_and_counted(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, steps=4, async_eta=1, async_workers=2)
    original = AsyncRollouts.draw
    held = threading.Event()

    def draw(self, index):
        result = original(self, index)
        if index == 1:  # sampled from step 0's weights, handed in only after step 2
            held.set()
            wait_for(lambda: self.learner_step >= 3, "the learner to pass step 2")
        return result

    AsyncRollouts.draw = draw
    try:
        rows = trainer.train()
    finally:
        AsyncRollouts.draw = original
    assert held.is_set()
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert all(r["staleness/max"] <= 1 for r in rows)  # nothing older was trained on
    assert rows[-1]["async/dropped"] == 1 and rows[-1]["async/dropped_samples"] == 8
    # the dropped request's prompts went back to admission: 4 trained + 1 dropped at least
    assert rows[-1]["async/admitted"] >= 5


def test_proximal_off_clips_against_the_behavior_policy(tokenizer, tmp_path):
    """lr 0 and behavior log-probs shifted: with the proximal policy every ratio is 1; with
    pi_old = the behavior log-probs the shift shows up as ratios."""
    rows = {}
    for proximal in (True, False):
        trainer = make(tokenizer, tmp_path / str(proximal), lr=0.0, top_p=0.9, proximal=proximal)
        sample = trainer.rollout

        def shifted(batch, n, _sample=sample, **kw):
            groups = _sample(batch, n, **kw)
            for s in (s for g in groups for s in g):
                s.logprobs = [lp + (0.2 if i % 2 else -0.2) for i, lp in enumerate(s.logprobs)]
            return groups

        trainer.rollout = shifted
        rows[proximal] = trainer.step()
    assert rows[True]["ratio/max"] == pytest.approx(1.0, abs=1e-6)
    assert rows[False]["ratio/max"] > 1.05 and rows[False]["ratio/min"] < 0.95


def test_a_failing_worker_stops_the_run_with_its_error(tokenizer, tmp_path):
    trainer = make(tokenizer, tmp_path, steps=3, async_eta=1)

    def broken(batch, n, **kw):
        raise ValueError("engine fell over")

    trainer.rollout = broken
    with pytest.raises(RuntimeError, match="rollout worker failed: engine fell over"):
        trainer.train()
