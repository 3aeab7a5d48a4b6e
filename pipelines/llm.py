"""The one LLM client: any OpenAI-compatible endpoint, addressed by role or profile name.

Adds what every stage needs on top of `openai.AsyncOpenAI`: our own counted retries with backoff,
per-profile concurrency limits, a durable request cache (a resumed run never repeats a finished
call), structured output with one repair retry, and token/cost accounting by tag and profile.
A profile with `backend: local` runs a model in-process instead (see local_llm.py): same caching,
accounting (cost 0 unless priced) and errors, so stages do not care which backend a role uses.
Every failure is an `LLMError` whose `drop_reason` the engine records as a ledgered drop.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import random
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, TypeVar

import openai
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    StrictStr,
    ValidationError,
    model_validator,
)

from rlclimb.pipelines.kvstore import KVStore, ObjectKV, open_kv
from rlclimb.pipelines.local_llm import LocalBatcher
from rlclimb.pipelines.storage import is_url
from rlclimb.schemas.io import load_yaml, safe_text

BACKOFF_CAP_S = 30.0
MAX_CALL_TOKENS = 10_000_000  # usage above this per call is a broken server, not a real bill
POOL_CONNECTIONS = 16  # per HTTP client; a profile with more concurrency gets several clients
RETRY_AFTER_CAP_S = 120.0
M = TypeVar("M", bound=BaseModel)


# ---- errors -------------------------------------------------------------------------------
class LLMConfigError(ValueError):
    pass


class LLMError(Exception):
    drop_reason = "llm_error"


class LLMTimeoutError(LLMError):
    drop_reason = "llm_timeout"


class LLMRateLimitError(LLMError):
    drop_reason = "llm_rate_limited"


class LLMServerError(LLMError):
    """5xx, or a 200 whose body is not a chat completion."""

    drop_reason = "llm_server_error"


class LLMConnectionError(LLMError):
    drop_reason = "llm_connection"


class LLMBadRequestError(LLMError):
    """4xx other than 408/429 (including 401/403: a wrong key fails every call the same way)."""

    drop_reason = "llm_bad_request"


class LLMRefusalError(LLMError):
    drop_reason = "llm_refusal"


class StructuredOutputError(LLMError):
    drop_reason = "llm_invalid_output"


# ---- config -------------------------------------------------------------------------------
class ModelProfile(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a typo in YAML should fail loudly

    name: str
    backend: Literal["openai", "local"] = "openai"  # local: `model` runs in-process (local_llm.py)
    base_url: str = ""  # required by the openai backend
    model: str
    api_key_env: str | None = "OPENAI_API_KEY"
    api_key: str | None = "EMPTY"  # literal, for local servers; set to null to require the env var
    concurrency: int = Field(8, ge=1)
    timeout_s: float = 60.0
    max_retries: int = Field(4, ge=0)
    backoff_s: float = 0.5
    price_input_per_mtok: float = 0.0
    price_output_per_mtok: float = 0.0
    structured_mode: Literal["json_schema", "json_object", "none"] = "json_schema"
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _backend_fields(self) -> ModelProfile:
        if self.backend == "openai" and not self.base_url:
            raise ValueError(f"profile {self.name!r}: base_url is required (or backend: local)")
        if self.backend == "local" and "structured_mode" not in self.model_fields_set:
            self.structured_mode = "none"  # no server to enforce a schema: the prompt carries it
        return self

    @property
    def endpoint(self) -> str:
        """Where calls go, for cache keys and messages."""
        return f"local:{self.model}" if self.backend == "local" else self.base_url.rstrip("/")

    def resolve_api_key(self) -> str:
        if "api_key" in self.model_fields_set and self.api_key:
            return self.api_key  # an explicit literal wins: never send a hosted key elsewhere
        env_key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if env_key or self.api_key:
            return env_key or self.api_key  # type: ignore[return-value]
        raise LLMConfigError(f"LLM profile {self.name!r}: set ${self.api_key_env} or api_key")


class LLMConfig(BaseModel):
    profiles: dict[str, ModelProfile]
    roles: dict[str, str] = Field(default_factory=dict)  # role -> profile name

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LLMConfig:
        data = data.get("llm", data)  # accept a whole config file with an `llm:` section
        profiles = {k: {"name": k, **v} for k, v in (data.get("profiles") or {}).items()}
        try:
            config = cls(profiles=profiles, roles=data.get("roles") or {})
        except ValidationError as e:
            raise LLMConfigError(f"invalid LLM config: {e}") from e
        for role, name in config.roles.items():
            if name not in config.profiles:
                raise LLMConfigError(
                    f"LLM role {role!r} points to unknown profile {name!r}; "
                    f"profiles: {sorted(config.profiles)}"
                )
        return config

    @classmethod
    def from_yaml(cls, path: str | Path) -> LLMConfig:
        import yaml

        try:
            data = load_yaml(Path(path).read_text()) or {}
        except OSError as e:
            raise LLMConfigError(f"cannot read LLM config {path}: {e.strerror}") from None
        except yaml.YAMLError as e:
            raise LLMConfigError(
                f"LLM config {path} is not valid YAML: {getattr(e, 'problem', None) or e}"
            ) from None
        if not isinstance(data, dict):
            raise LLMConfigError(f"LLM config {path} must be a YAML mapping")
        return cls.from_dict(data)

    def resolve(self, role_or_profile: str) -> ModelProfile:
        name = self.roles.get(role_or_profile, role_or_profile)
        if name not in self.profiles:
            raise LLMConfigError(
                f"unknown LLM role or profile {role_or_profile!r}; "
                f"roles: {sorted(self.roles)}, profiles: {sorted(self.profiles)}"
            )
        return self.profiles[name]


# ---- results and accounting ---------------------------------------------------------------
@dataclass
class Completion:
    text: str
    finish_reason: str | None
    prompt_tokens: int
    completion_tokens: int
    cost: float
    model: str  # profile name
    cached: bool = False


@dataclass
class Usage:
    requests: int = 0  # HTTP calls made, retries included
    cache_hits: int = 0  # answered from the cache or by an identical in-flight call
    retries: int = 0
    failures: int = 0  # calls that ended in an LLMError
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0  # tokens of cache hits: not paid again, not in the two above
    cost: float = 0.0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )


@dataclass
class _LoopState:
    """Per event loop: asyncio primitives and httpx connections must not outlive their loop,
    and the engine may call `asyncio.run` more than once in a process."""

    loop: asyncio.AbstractEventLoop
    clients: dict[str, openai.AsyncOpenAI] = field(default_factory=dict)
    sems: dict[str, asyncio.Semaphore] = field(default_factory=dict)
    batchers: dict[str, LocalBatcher] = field(default_factory=dict)
    turn: int = 0  # round robin over a profile's HTTP clients
    inflight: dict[str, asyncio.Future[Completion]] = field(default_factory=dict)
    closer: asyncio.Task[None] | None = None

    async def close(self) -> None:
        clients, self.clients = list(self.clients.values()), {}
        for client in clients:
            await client.close()

    async def close_at_loop_end(self) -> None:
        # asyncio.run cancels leftover tasks before closing the loop: that is our cue to close
        # the connections, which would otherwise be torn down noisily from a dead loop.
        try:
            await asyncio.Event().wait()
        finally:
            await self.close()


# ---- client -------------------------------------------------------------------------------
class LLMClient:
    def __init__(self, config: LLMConfig, cache_path: str | Path | None = None):
        self.config = config
        self.cache_path = cache_path if is_url(cache_path) else Path(cache_path) if cache_path else None
        self._store: KVStore | ObjectKV | None = None
        self._loops: dict[int, _LoopState] = {}
        self.usage: dict[str, Usage] = {}  # by tag; None -> "_"
        self.usage_by_profile: dict[str, Usage] = {}

    async def complete(
        self,
        role_or_profile: str,
        messages: list[dict[str, Any]],
        *,
        tag: str | None = None,
        seed: int | None = None,
        **params: Any,
    ) -> Completion:
        profile = self.config.resolve(role_or_profile)
        return await self._complete(profile, messages, tag, seed, params)

    async def structured(
        self,
        role_or_profile: str,
        messages: list[dict[str, Any]],
        output_model: type[M],
        *,
        tag: str | None = None,
        seed: int | None = None,
        **params: Any,
    ) -> tuple[M, Completion]:
        profile = self.config.resolve(role_or_profile)
        schema = output_model.model_json_schema()
        messages = list(messages)
        if profile.structured_mode == "json_schema":
            name = re.sub(r"[^A-Za-z0-9_-]", "_", output_model.__name__)[:64]
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": False},
            }
        else:  # the server won't enforce the schema, so the model has to be told
            if profile.structured_mode == "json_object":
                params["response_format"] = {"type": "json_object"}
            hint = "Reply with a single JSON object matching this JSON schema, and nothing else:\n"
            messages.append({"role": "user", "content": hint + json.dumps(schema)})

        first = await self._complete(profile, messages, tag, seed, params)
        try:
            return _parse_into(output_model, first.text), first
        except (ValueError, ValidationError) as e:
            error = str(e)[:2000]
        repair = messages + [
            {"role": "assistant", "content": first.text},
            {
                "role": "user",
                "content": f"That reply is invalid: {error}\n"
                "Reply with the corrected JSON object only, no prose and no code fences.",
            },
        ]
        second = await self._complete(profile, repair, tag, seed, params)
        total = replace(
            second,
            prompt_tokens=first.prompt_tokens + second.prompt_tokens,
            completion_tokens=first.completion_tokens + second.completion_tokens,
            cost=first.cost + second.cost,
            cached=first.cached and second.cached,
        )
        try:
            return _parse_into(output_model, second.text), total
        except (ValueError, ValidationError) as e:
            self._account(tag, profile, failures=1)
            raise StructuredOutputError(
                f"{profile.name}: no valid {output_model.__name__} after one repair: {str(e)[:500]}"
            ) from e

    def usage_snapshot(self) -> dict[str, Any]:
        total = sum(self.usage.values(), Usage())
        return {
            "by_tag": {k: asdict(v) for k, v in self.usage.items()},
            "by_profile": {k: asdict(v) for k, v in self.usage_by_profile.items()},
            "total": asdict(total),
        }

    async def aclose(self) -> None:
        state = self._loops.pop(id(asyncio.get_running_loop()), None)
        self._loops.clear()  # other loops are closed: their closer task already ran
        if state is not None:
            if state.closer is not None:
                state.closer.cancel()
            await state.close()
        if self._store is not None:
            self._store.close()
            self._store = None  # reopened lazily if the client is used again

    # ---- internals ------------------------------------------------------------------------
    async def _complete(
        self,
        profile: ModelProfile,
        messages: list[dict[str, Any]],
        tag: str | None,
        seed: int | None,
        params: dict[str, Any],
    ) -> Completion:
        body: dict[str, Any] = {
            "model": profile.model,
            "messages": messages,
            **profile.params,
            **params,
        }
        if seed is not None:
            body["seed"] = seed
        # The key covers the full request (and the endpoint), never the profile name or the key.
        key = "llm/" + hashlib.sha256(_canonical(profile.endpoint, body)).hexdigest()

        store = self._cache()
        cached = _cached_completion(store.get(key)) if store is not None else None
        if cached is not None:
            return self._hit(tag, profile, cached)

        state = self._state()
        while (pending := state.inflight.get(key)) is not None:  # share an identical live call
            try:
                return self._hit(tag, profile, await asyncio.shield(pending))
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if pending.cancelled() and not (task and task.cancelling()):
                    continue  # its owner was cancelled, not us: make the call ourselves
                raise
            except LLMError:
                self._account(tag, profile, failures=1)
                raise

        future: asyncio.Future[Completion] = state.loop.create_future()
        state.inflight[key] = future
        try:
            result = await self._call_once(key, profile, body, tag, state)
            if store is not None and result.text and not result.cached:
                # Committed before returning: a killed run never pays for this call again.
                store.put(key, json.dumps(asdict(result)).encode())
            future.set_result(result)
            return result
        except BaseException as e:
            if isinstance(e, LLMError):
                self._account(tag, profile, failures=1)
                future.set_exception(e)
                future.exception()  # mark retrieved: nobody may be waiting
            else:
                future.cancel()
            raise
        finally:
            state.inflight.pop(key, None)

    async def _call_once(
        self, key: str, profile: ModelProfile, body: dict[str, Any], tag: str | None, state: _LoopState
    ) -> Completion:
        """The call of a request that nobody in this process is making (and none cached). On Ray,
        `ClusterLLMClient` first asks whether another process is making it."""
        return await self._call(profile, body, tag, state)

    async def _call(
        self, profile: ModelProfile, body: dict[str, Any], tag: str | None, state: _LoopState
    ) -> Completion:
        if profile.backend == "local":
            return await self._call_local(profile, body, tag, state)
        sem = state.sems.setdefault(profile.name, asyncio.Semaphore(profile.concurrency))
        for attempt in range(profile.max_retries + 1):
            client = self._client(profile, state)
            try:
                async with sem:
                    self._account(tag, profile, requests=1)
                    # The SDK's plain POST: our body goes as is (any param: vLLM's top_k, ...) and
                    # the reply is read as JSON; `chat.completions.create` would spend ~2 ms of CPU
                    # per call on typed transforms both ways: a third of the throughput at 64 calls
                    # in flight (benchmarks/score_throughput.py).
                    # httpx's timeout restarts on every byte read; this bounds the whole call
                    # (a server dripping one byte at a time must not hold it indefinitely).
                    async with asyncio.timeout(profile.timeout_s):
                        raw = await client.post("/chat/completions", body=body, cast_to=str)
                data = json.loads(raw)
                return self._to_completion(profile, tag, data)
            except (openai.APIError, json.JSONDecodeError, LLMServerError, TimeoutError) as e:
                err, retryable, retry_after = _classify(profile, e)
                if not retryable or attempt == profile.max_retries:
                    raise err from e
            delay = retry_after
            if delay is None:  # exponential, with jitter so that throttled callers spread out
                delay = min(BACKOFF_CAP_S, profile.backoff_s * 2**attempt)
                delay *= random.uniform(0.5, 1.0)
            self._account(tag, profile, retries=1)
            await asyncio.sleep(delay)  # outside the semaphore: a backoff holds no slot
        raise AssertionError("unreachable")

    def _client(self, profile: ModelProfile, state: _LoopState) -> openai.AsyncOpenAI:
        """One of the profile's HTTP clients, round robin. Each has its own connection pool of at
        most POOL_CONNECTIONS: httpcore scans its whole pool on every request, which made one
        pool of 64 connections cost more CPU than the calls themselves."""
        pools = max(1, -(-profile.concurrency // POOL_CONNECTIONS))
        state.turn = (state.turn + 1) % pools
        key = f"{profile.name}#{state.turn}"
        client = state.clients.get(key)
        if client is None:
            if state.closer is None:  # only connections need closing (local-only runs have none)
                state.closer = state.loop.create_task(state.close_at_loop_end())
            client = state.clients[key] = openai.AsyncOpenAI(
                base_url=profile.base_url,
                api_key=profile.resolve_api_key(),
                timeout=profile.timeout_s,
                max_retries=0,  # our retries: counted, consistent
            )
        return client

    async def _call_local(
        self, profile: ModelProfile, body: dict[str, Any], tag: str | None, state: _LoopState
    ) -> Completion:
        # No semaphore: the batcher runs up to `concurrency` requests per generate call.
        batcher = state.batchers.get(profile.name)
        if batcher is None:
            batcher = state.batchers[profile.name] = LocalBatcher(
                profile.model, profile.concurrency
            )
        params = {k: v for k, v in body.items() if k not in ("model", "messages", "seed")}
        self._account(tag, profile, requests=1)
        try:
            out = await batcher.submit(body["messages"], params, body.get("seed"))
        except (ImportError, OSError, ValueError) as e:  # missing extra, missing model files
            raise LLMBadRequestError(f"{profile.name} (local {profile.model}): {e}") from e
        except Exception as e:  # a failed generate (memory, ...): worth a retry on resume
            raise LLMServerError(f"{profile.name} (local {profile.model}): {e!r}") from e
        pt, ct = out.prompt_tokens, out.completion_tokens
        cost = (pt * profile.price_input_per_mtok + ct * profile.price_output_per_mtok) / 1e6
        self._account(tag, profile, prompt_tokens=pt, completion_tokens=ct, cost=cost)
        return Completion(out.text, out.finish_reason, pt, ct, cost, profile.name)

    def _to_completion(self, profile: ModelProfile, tag: str | None, data: Any) -> Completion:
        try:  # the decoded JSON body of a chat completion, checked before anything is cached
            reply = _ChatReply.model_validate(data)
        except ValidationError as e:
            why = "; ".join(f"{'.'.join(map(str, err['loc']))}: {err['msg']}" for err in e.errors()[:3])
            raise LLMServerError(
                f"{profile.name}: malformed response ({why}): {str(data)[:200]!r}"
            ) from None
        choice, usage = reply.choices[0], reply.usage or _ReplyUsage()
        pt, ct = usage.prompt_tokens or 0, usage.completion_tokens or 0
        cost = (pt * profile.price_input_per_mtok + ct * profile.price_output_per_mtok) / 1e6
        self._account(tag, profile, prompt_tokens=pt, completion_tokens=ct, cost=cost)
        text, refusal = safe_text(choice.message.content or ""), choice.message.refusal
        if refusal or (not text and choice.finish_reason == "content_filter"):
            raise LLMRefusalError(f"{profile.name} refused: {(refusal or 'content_filter')[:200]}")
        return Completion(text, choice.finish_reason, pt, ct, cost, profile.name)

    def _hit(self, tag: str | None, profile: ModelProfile, c: Completion) -> Completion:
        self._account(
            tag, profile, cache_hits=1, cached_tokens=c.prompt_tokens + c.completion_tokens
        )
        return replace(c, cost=0.0, model=profile.name, cached=True)

    def _account(self, tag: str | None, profile: ModelProfile, **deltas: Any) -> None:
        for table, key in ((self.usage, tag or "_"), (self.usage_by_profile, profile.name)):
            u = table.setdefault(key, Usage())
            for name, value in deltas.items():
                setattr(u, name, getattr(u, name) + value)

    def _cache(self) -> KVStore | ObjectKV | None:
        if self._store is None and self.cache_path is not None:
            self._store = open_kv(self.cache_path)  # objects in the store for a run at a URL
        return self._store

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(id(loop))
        if state is None or state.loop is not loop:
            self._loops = {k: s for k, s in self._loops.items() if not s.loop.is_closed()}
            state = self._loops[id(loop)] = _LoopState(loop)
        return state


# The shape of a chat completion that we rely on; anything else is a malformed (transient) reply.
class _ReplyMessage(BaseModel):
    content: StrictStr | None = None
    refusal: StrictStr | None = None


class _ReplyChoice(BaseModel):
    message: _ReplyMessage
    finish_reason: StrictStr | None = None


class _ReplyUsage(BaseModel):
    prompt_tokens: StrictInt | None = Field(None, ge=0, le=MAX_CALL_TOKENS)
    completion_tokens: StrictInt | None = Field(None, ge=0, le=MAX_CALL_TOKENS)


class _ChatReply(BaseModel):
    choices: list[_ReplyChoice] = Field(min_length=1)
    usage: _ReplyUsage | None = None


def _cached_completion(raw: bytes | None) -> Completion | None:
    """A cache entry, or None when absent or not a valid completion (an older version cached
    malformed replies): it is then asked again and overwritten."""
    if raw is None:
        return None
    try:
        c = Completion(**json.loads(raw))
    except (TypeError, ValueError):
        return None
    ok = isinstance(c.text, str) and c.text and isinstance(c.finish_reason, str | None)
    counts = (c.prompt_tokens, c.completion_tokens)
    ok = ok and all(type(n) is int and 0 <= n <= MAX_CALL_TOKENS for n in counts)
    return c if ok else None


def _classify(profile: ModelProfile, e: Exception) -> tuple[LLMError, bool, float | None]:
    """-> (error to raise if we give up, retryable, server-requested delay)."""
    where = f"{profile.name} ({profile.base_url})"
    if isinstance(e, openai.APITimeoutError | TimeoutError):
        return LLMTimeoutError(f"{where}: timed out after {profile.timeout_s} s"), True, None
    if isinstance(e, openai.APIConnectionError):
        return LLMConnectionError(f"{where}: {e}"), True, None
    if isinstance(e, openai.APIStatusError):
        code, retry_after = e.status_code, _retry_after(e.response.headers)
        msg = f"{where}: HTTP {code}: {str(e)[:300]}"
        if code == 429:
            return LLMRateLimitError(msg), True, retry_after
        if code == 408:
            return LLMTimeoutError(msg), True, retry_after
        if code >= 500:
            return LLMServerError(msg), True, retry_after
        return LLMBadRequestError(msg), False, None
    if isinstance(e, LLMServerError):
        return e, True, None
    # a body that is not JSON, or another APIError: a broken response
    return LLMServerError(f"{where}: malformed response: {str(e)[:300]}"), True, None


def _retry_after(headers: Any) -> float | None:
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        try:
            value = float(headers.get(name)) * scale
        except (TypeError, ValueError):
            continue  # absent, or an HTTP date: fall back to our own backoff
        return min(max(value, 0.0), RETRY_AFTER_CAP_S)
    return None


def _canonical(base_url: str, body: dict[str, Any]) -> bytes:
    obj = {"base_url": base_url, **body}
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


_FENCE = re.compile(r"```(?:json)?\s*\n?(.*?)```", re.DOTALL | re.IGNORECASE)


def _extract_json(text: str) -> Any:
    """The first JSON object in `text`, tolerating code fences and prose around it."""
    text = text.strip()
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                return decoder.raw_decode(candidate, start)[0]
            except ValueError:
                start = candidate.find("{", start + 1)
    raise ValueError(f"no JSON object found in reply: {text[:200]!r}")


def _parse_into(output_model: type[M], text: str) -> M:
    return output_model.model_validate(_extract_json(text))
