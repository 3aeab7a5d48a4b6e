"""Rollout engines: the server engine against a real HTTP server on 127.0.0.1 (the project's
scripted OpenAI-compatible server, answering /v1/completions with a real tiny model and
per-token log-probs), weight pushes by save + reload endpoint, timeouts as clear errors."""

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from helpers.rl_agentic import CapitalEnv, config, items, tiny, tokenizer_or_skip  # noqa: E402

from rlclimb.rl.engines import EngineError, make_engine  # noqa: E402
from rlclimb.rl.engines.model_server import ModelServer  # noqa: E402
from rlclimb.rl.trainer import Trainer  # noqa: E402


@pytest.fixture(scope="module")
def tokenizer():
    return tokenizer_or_skip()


def server_trainer(tokenizer, tmp_path, server, **overrides):
    options = {"base_url": server.base_url, "weights_dir": str(tmp_path / "weights"),
               "reload_timeout_s": 60, "timeout_s": 60}
    options.update(overrides.pop("engine_options", {}))
    return Trainer(
        config(engine="server", engine_options=options, top_p=1.0, **overrides),
        tiny(tokenizer),
        tokenizer,
        items(),
        tmp_path / "run",
        environments={"math": CapitalEnv()},
    )


def test_server_samples_carry_the_servers_logprobs(tokenizer, tmp_path):
    # the server holds its own copy of the same initial weights, as a real server would
    with ModelServer(tiny(tokenizer), tokenizer) as server:
        trainer = server_trainer(tokenizer, tmp_path, server, max_new_tokens=6)
        groups = trainer.rollout(trainer.train_items[:2], 3)
        sent = [r for r in server.server.requests if "prompt" in r]
    assert [len(g) for g in groups] == [3, 3]
    assert len(sent) == 2 and all(r["n"] == 3 and r["return_tokens_as_token_ids"] for r in sent)
    # token ids, not text (the two requests run concurrently: any order)
    assert sorted(r["prompt"] for r in sent) == sorted(trainer.prompt_ids(i) for i in trainer.train_items[:2])
    samples = [s for g in groups for s in g]
    assert all(len(s.completion_ids) == len(s.logprobs) > 0 for s in samples)
    # the learner's log-probs on the same weights are the server's behavior log-probs
    with torch.no_grad():
        batch = trainer.batch(samples)
        learner = trainer.logprobs(batch)
    mask = batch["targets"] != trainer.pad_id
    assert torch.allclose(learner[mask], batch["behavior"][mask], atol=1e-4)


def test_server_greedy_equals_local_greedy(tokenizer, tmp_path):
    prompt = tokenizer("<|im_start|>user\nhi<|im_end|>\n", add_special_tokens=False)["input_ids"]
    local = make_engine(config(), tiny(tokenizer), tokenizer, eos_ids=[2], pad_id=2,
                        autocast=None, copy_model=False)
    (a,) = local.generate([prompt], n=1, max_new_tokens=8, greedy=True)
    with ModelServer(tiny(tokenizer), tokenizer) as server:
        remote = make_engine(config(engine="server", engine_options={"base_url": server.base_url}),
                             None, tokenizer, eos_ids=[2], pad_id=2, autocast=None, copy_model=False)
        (b,) = remote.generate([prompt], n=1, max_new_tokens=8, greedy=True)
    assert a[0].completion_ids == b[0].completion_ids
    assert a[0].logprobs == pytest.approx(b[0].logprobs, abs=1e-5)


def test_weights_reach_the_server_after_each_step(tokenizer, tmp_path):
    with ModelServer(tiny(tokenizer), tokenizer) as server:
        trainer = server_trainer(tokenizer, tmp_path, server, steps=2)
        rows = trainer.train()
        served = server.model.state_dict()
        loaded = list(server.loaded)
    assert [r["step"] for r in rows] == [1, 2]
    assert [p.rsplit("/", 1)[1] for p in loaded] == ["step-000001", "step-000002"]
    for name, value in trainer.model.state_dict().items():
        assert torch.equal(served[name], value), name
    # the second step's rollouts were sampled by the server from the first step's weights
    assert rows[1]["engine/replay"] == 0 and rows[1]["reward_all"] is not None
    # only the newest weight directories are kept
    assert sorted(p.name for p in (tmp_path / "weights").iterdir()) == ["step-000001", "step-000002"]


def test_reload_timeout_is_a_clear_error(tokenizer, tmp_path):
    with ModelServer(tiny(tokenizer), tokenizer, reload_delay_s=30) as server:
        trainer = server_trainer(tokenizer, tmp_path, server, steps=1,
                                 engine_options={"reload_timeout_s": 0.5})
        with pytest.raises(EngineError, match=r"did not answer within 0.5 s.*step-000001"):
            trainer.train()


def test_unreachable_server_is_a_clear_error(tokenizer, tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    remote = make_engine(
        config(engine="server", engine_options={"base_url": f"http://127.0.0.1:{port}/v1", "timeout_s": 5}),
        None, tokenizer, eos_ids=[2], pad_id=2, autocast=None, copy_model=False,
    )
    with pytest.raises(EngineError, match=f"127.0.0.1:{port}.*ConnectError"):
        remote.generate([[1, 2]], n=1, max_new_tokens=2)


def test_a_server_without_logprobs_is_refused(tokenizer):
    from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

    with ScriptedServer(lambda body, n: Reply("plain text")) as server:
        remote = make_engine(config(engine="server", engine_options={"base_url": server.base_url}),
                             None, tokenizer, eos_ids=[2], pad_id=2, autocast=None, copy_model=False)
        with pytest.raises(EngineError, match="without per-token logprobs"):
            remote.generate([[1, 2]], n=1, max_new_tokens=2)


def test_top_p_without_a_nucleus_turns_replay_off(tokenizer, tmp_path):
    with ModelServer(tiny(tokenizer), tokenizer) as server:
        with pytest.warns(UserWarning, match="returns no top-p nucleus"):
            trainer = Trainer(
                config(engine="server", engine_options={"base_url": server.base_url,
                                                        "weights_dir": str(tmp_path / "w")},
                       top_p=0.9),
                tiny(tokenizer), tokenizer, items(), tmp_path / "run",
                environments={"math": CapitalEnv()},
            )
        row = trainer.step()
    assert trainer.replay is False and row["engine/replay"] == 0
    local = Trainer(config(top_p=0.9), tiny(tokenizer), tokenizer, items(), tmp_path / "l",
                    environments={"math": CapitalEnv()})
    assert local.replay is True


def test_chat_replies_can_carry_logprobs():
    """The scripted server's chat route returns scripted log-probs as the API does."""
    import httpx

    from rlclimb.pipelines.scripted_server import Reply, ScriptedServer

    lp = {"content": [{"token": "hi", "logprob": -0.5, "top_logprobs": [{"token": "hi", "logprob": -0.5}]}]}
    with ScriptedServer(lambda body, n: Reply("hi", logprobs=lp)) as server:
        r = httpx.post(f"{server.base_url}/chat/completions",
                       json={"messages": [{"role": "user", "content": "x"}], "logprobs": True})
    assert r.json()["choices"][0]["logprobs"] == lp


def test_vllm_engine_says_how_to_get_it(tokenizer):
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed here; the engine needs a GPU, not run in these tests")
    with pytest.raises(EngineError, match=r"pip install 'rlclimb\[vllm\]'"):
        make_engine(config(engine="vllm"), tiny(tokenizer), tokenizer, eos_ids=[2], pad_id=2,
                    autocast=None, copy_model=False)


def test_engine_options_survive_the_config_file(tmp_path):
    cfg = config(engine="server", engine_options={"base_url": "http://127.0.0.1:1/v1"})
    assert json.loads(cfg.model_dump_json())["engine_options"]["base_url"].endswith("/v1")


def test_train_command_with_the_server_engine_and_async(tokenizer, tmp_path, monkeypatch):
    """`rlclimb train --engine server --server-url --weights-dir --async-eta`: the CLI path, one
    real HTTP server, two steps; without --server-url it says what is missing."""
    from typer.testing import CliRunner

    from rlclimb.pipelines.cli import app

    monkeypatch.setenv("RLCLIMB_TORCH_THREADS", "1")
    threads = torch.get_num_threads()
    model = tmp_path / "tiny"
    tiny(tokenizer).save_pretrained(model)
    tokenizer.save_pretrained(model)
    data = tmp_path / "items.jsonl"
    data.write_text("".join(json.dumps({"question": f"What is {i} + 1?", "answer": str(i + 1)}) + "\n"
                            for i in range(6)))
    fast = ["--set", "max_new_tokens=3", "--set", "max_new_tokens_cap=3", "--set", "prompts_per_step=1",
            "--set", "group_size=2", "--set", "early_group_size=0", "--set", "pass_range=[0,1]",
            "--set", "eval_items=0", "--set", "checkpoint_every=0", "--set", "top_p=1.0", "-q"]
    runner = CliRunner()
    try:
        missing = runner.invoke(app, ["train", str(data), "-m", str(model), "-o", str(tmp_path / "a"),
                                      "--engine", "server", *fast])
        assert missing.exit_code != 0 and "needs --server-url" in missing.output
        with ModelServer(tiny(tokenizer), tokenizer) as server:
            result = runner.invoke(app, [
                "train", str(data), "-m", str(model), "-o", str(tmp_path / "run"), "--steps", "2",
                "--engine", "server", "--server-url", server.base_url,
                "--weights-dir", str(tmp_path / "weights"), "--async-eta", "1", *fast])
            loaded, url = list(server.loaded), server.base_url
    finally:
        torch.set_num_threads(threads)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1, 2] and all(r["staleness/max"] <= 1 for r in rows)
    assert len(loaded) == 2
    saved = json.loads((tmp_path / "run" / "config.json").read_text())["grpo"]
    assert saved["engine"] == "server" and saved["async_eta"] == 1
    assert saved["engine_options"]["base_url"] == url
