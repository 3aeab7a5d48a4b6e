"""Which tool outputs feed which tool inputs, and tool-call chains sampled from that graph.

A tool *produces* the fields of the JSON it returns: the ones its design declares plus the keys
seen in its real output when it was smoke-tested (one level into lists and nested objects). A
tool *consumes* its parameters. There is an edge A -> B when B takes an argument named like a
field A produces (of a compatible type when both are known), so a chain is a plausible workflow:
look a customer up, then use the id it returned to place an order.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

_PY_JSON = {str: "string", bool: "boolean", int: "integer", float: "number"}


@dataclass
class ToolNode:
    name: str
    kind: str  # read | write
    parameters: dict[str, str]  # argument -> JSON type
    produces: dict[str, str | None] = field(default_factory=dict)  # field -> JSON type (None: unknown)


def observed_fields(output: str) -> dict[str, str | None]:
    """Field names (and JSON types) in a tool's output text, when it is JSON."""
    try:
        value = json.loads(output)
    except (TypeError, ValueError):
        return {}
    found: dict[str, str | None] = {}

    def walk(v: Any, depth: int) -> None:
        if depth > 2:
            return
        if isinstance(v, dict):
            for k, x in v.items():
                found.setdefault(str(k), _PY_JSON.get(type(x)))
                if isinstance(x, dict | list):
                    walk(x, depth + 1)
        elif isinstance(v, list):
            for x in v[:5]:
                walk(x, depth + 1)

    walk(value, 0)
    return found


def _compatible(a: str | None, b: str | None) -> bool:
    if a is None or b is None or a == b:
        return True
    return {a, b} == {"integer", "number"}


class ToolGraph:
    def __init__(self, nodes: list[ToolNode]):
        self.nodes = {n.name: n for n in nodes}
        self.edges: dict[str, dict[str, list[str]]] = {n.name: {} for n in nodes}  # A -> B -> args
        for a in nodes:
            for b in nodes:
                if a.name == b.name:
                    continue
                args = [p for p, t in b.parameters.items() if p in a.produces and _compatible(a.produces[p], t)]
                if args:
                    self.edges[a.name][b.name] = args

    @classmethod
    def from_bundle(cls, bundle: dict[str, Any]) -> ToolGraph:
        """The graph of an environment bundle (its design's tools and their smoke-test outputs)."""
        nodes = []
        for t in bundle["tools"]:
            produces: dict[str, str | None] = {f: None for f in t.get("returns") or []}
            for k, typ in observed_fields(bundle.get("observed", {}).get(t["name"], "")).items():
                if produces.get(k) is None:
                    produces[k] = typ
            nodes.append(ToolNode(t["name"], t["kind"], dict(t.get("parameters") or {}), produces))
        return cls(nodes)

    def successors(self, name: str) -> list[str]:
        return sorted(self.edges[name])

    def edge_count(self) -> int:
        return sum(len(v) for v in self.edges.values())

    def sample_chains(self, n: int, rng: random.Random, max_len: int = 3, write_share: float = 0.6) -> list[list[str]]:
        """`n` chains (lists of tool names). Each starts anywhere and follows edges: the next
        tool takes an argument some earlier tool produced. About `write_share` of them end in a
        write tool when the graph allows. Distinct chains come first; repeats only when the
        graph has fewer distinct chains than asked for."""
        names = sorted(self.nodes)
        if not names:
            return []
        # Entry points (tools no other tool feeds: they take what the user says, e.g. an email)
        # start chains twice as often: that is where real requests begin.
        fed = {b for a in self.edges for b in self.edges[a]}
        weights = [1 if n in fed else 2 for n in names]
        chains: list[list[str]] = []
        seen: set[tuple[str, ...]] = set()
        attempts = 0
        while len(chains) < n and attempts < 50 * n:
            attempts += 1
            want_write = rng.random() < write_share
            chain = rng.choices(names, weights)
            target = rng.randint(1, max_len)
            while len(chain) < target:
                nxt = sorted({s for c in chain for s in self.successors(c)} - set(chain))
                if not nxt:
                    break
                writes = [s for s in nxt if self.nodes[s].kind == "write"]
                pool = writes if want_write and writes and len(chain) == target - 1 else nxt
                chain.append(rng.choice(pool))
            has_write = any(self.nodes[c].kind == "write" for c in chain)
            if want_write != has_write and attempts < 25 * n:
                continue  # try for the mix asked for; later attempts take what the graph gives
            key = tuple(chain)
            if key in seen and attempts < 40 * n:
                continue
            seen.add(key)
            chains.append(chain)
        return chains
