"""Scripted LLM replies for the tool-envs pipeline (tests and benchmarks/tool_env_yield.py).

`ToolEnvScript` answers each prompt kind the way a capable model would, for a bike-shop
description: a design, an implementation with one broken tool (get_order reads a collection
that does not exist) and a stock bug, a critique that finds the stock bug, a revision, a repair
once the smoke test reports the broken tool, tasks written for whichever tool chain the prompt
names, and no-tool requests. Planted faults, so the real parsing, execution and repair code runs:
- the design for a description mentioning "parking garage" is prose, twice (llm_invalid_output);
- a chain made of list_bikes alone gets prose, twice (llm_invalid_output at verify);
- a chain starting with get_bike uses the id "B-1", which does not exist (gold_failed);
- cancel_order with no order placed before it cancels o2, already cancelled (noop_write);
- cancel_order -> place_order is written as place_order -> cancel_order: that chain's gold
  actions again (duplicate_actions);
- no-tool requests repeat per persona, reworded (near_duplicate).
Requests are counted per kind, and every answered request body is recorded (resume tests).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections import Counter

from rlclimb.pipelines.scripted_server import Reply

DESIGN = {
    "entities": [
        {"name": "customer", "collection": "customers", "id_field": "customer_id",
         "fields": {"customer_id": "string", "name": "string", "email": "string"}},
        {"name": "bike", "collection": "bikes", "id_field": "bike_id",
         "fields": {"bike_id": "string", "model": "string", "price": "number", "stock": "integer"}},
        {"name": "order", "collection": "orders", "id_field": "order_id",
         "fields": {"order_id": "string", "customer_id": "string", "bike_id": "string", "quantity": "integer",
                    "total": "number", "status": "string"}},
    ],
    "tools": [
        {"name": "find_customer", "kind": "read", "description": "Find a customer by email.",
         "parameters": {"email": "string"}, "returns": ["customer_id", "name", "email"]},
        {"name": "list_bikes", "kind": "read", "description": "List the bikes in the shop.",
         "parameters": {}, "returns": ["bikes", "bike_id", "model", "price", "stock"]},
        {"name": "get_bike", "kind": "read", "description": "Look up one bike.",
         "parameters": {"bike_id": "string"}, "returns": ["bike_id", "model", "price", "stock"]},
        {"name": "place_order", "kind": "write", "description": "Order a bike for a customer.",
         "parameters": {"customer_id": "string", "bike_id": "string", "quantity": "integer"},
         "returns": ["order_id", "total", "status"]},
        {"name": "get_order", "kind": "read", "description": "Look up an order.",
         "parameters": {"order_id": "string"}, "returns": ["order_id", "customer_id", "bike_id", "status", "total"]},
        {"name": "cancel_order", "kind": "write", "description": "Cancel an order and restock its bikes.",
         "parameters": {"order_id": "string"}, "returns": ["order_id", "status"]},
    ],
    "policy": "You are the assistant of Spoke & Chain, a small bike shop. Identify the customer by email before "
              "ordering. Never order more bikes than are in stock. The shop opens at 9:00 and closes at 18:00, "
              "Monday to Saturday.",
    "personas": ["A hurried commuter whose old bike was stolen", "A parent buying a first bike for a child"],
}

STATE = {
    "customers": {"c1": {"customer_id": "c1", "name": "Ana Ruiz", "email": "ana@example.com"},
                  "c2": {"customer_id": "c2", "name": "Ben Okafor", "email": "ben@example.com"}},
    "bikes": {"b1": {"bike_id": "b1", "model": "Commuter 3", "price": 450.0, "stock": 4},
              "b2": {"bike_id": "b2", "model": "Trail X", "price": 980.0, "stock": 1},
              "b3": {"bike_id": "b3", "model": "Kids 16", "price": 180.0, "stock": 0}},
    "orders": {"o1": {"order_id": "o1", "customer_id": "c1", "bike_id": "b1", "quantity": 1, "total": 450.0, "status": "placed"},
               "o2": {"order_id": "o2", "customer_id": "c2", "bike_id": "b2", "quantity": 1, "total": 980.0, "status": "cancelled"}},
}
EXAMPLES = {"find_customer": {"email": "ana@example.com"}, "list_bikes": {}, "get_bike": {"bike_id": "b1"},
            "place_order": {"customer_id": "c1", "bike_id": "b1", "quantity": 1}, "get_order": {"order_id": "o1"},
            "cancel_order": {"order_id": "o1"}}

HEAD = '''from rlclimb_tools import tool


@tool(kind="read")
def find_customer(state, email: str) -> dict:
    """Find a customer by email.

    Args:
        email: The customer's email address.
    """
    for customer in state["customers"].values():
        if customer["email"].lower() == email.strip().lower():
            return customer
    raise ValueError(f"no customer with email {email}")


@tool(kind="read")
def list_bikes(state) -> dict:
    """List the bikes in the shop with price and stock."""
    return {"bikes": sorted(state["bikes"].values(), key=lambda b: b["bike_id"])}


@tool(kind="read")
def get_bike(state, bike_id: str) -> dict:
    """Look up one bike.

    Args:
        bike_id: The bike's id, such as 'b1'.
    """
    if bike_id not in state["bikes"]:
        raise ValueError(f"unknown bike {bike_id}")
    return state["bikes"][bike_id]


@tool(kind="write")
def place_order(state, customer_id: str, bike_id: str, quantity: int = 1) -> dict:
    """Order a bike for a customer.

    Args:
        customer_id: The customer's id.
        bike_id: The bike's id.
        quantity: How many bikes.
    """
    if customer_id not in state["customers"]:
        raise ValueError(f"unknown customer {customer_id}")
    bike = state["bikes"].get(bike_id)
    if bike is None:
        raise ValueError(f"unknown bike {bike_id}")
    if quantity < 1 or quantity > bike["stock"]:
        raise ValueError(f"only {bike['stock']} of {bike['model']} in stock")
    order_id = f"o{len(state['orders']) + 1}"
    order = {"order_id": order_id, "customer_id": customer_id, "bike_id": bike_id, "quantity": quantity,
             "total": round(bike["price"] * quantity, 2), "status": "placed"}
    state["orders"][order_id] = order
STOCK
    return order
'''
STOCK_FIX = '    bike["stock"] -= quantity'

GET_ORDER_BROKEN = '''

@tool(kind="read")
def get_order(state, order_id: str) -> dict:
    """Look up an order.

    Args:
        order_id: The order's id, such as 'o1'.
    """
    return state["order"][order_id]
'''
GET_ORDER_FIXED = GET_ORDER_BROKEN.replace('    return state["order"][order_id]', '''    if order_id not in state["orders"]:
        raise ValueError(f"unknown order {order_id}")
    return state["orders"][order_id]''')
CANCEL = '''

@tool(kind="write")
def cancel_order(state, order_id: str) -> dict:
    """Cancel an order and put its bikes back in stock.

    Args:
        order_id: The order's id.
    """
    order = state["orders"].get(order_id)
    if order is None:
        raise ValueError(f"unknown order {order_id}")
    if order["status"] != "cancelled":
        order["status"] = "cancelled"
        state["bikes"][order["bike_id"]]["stock"] += order["quantity"]
    return order
'''


GET_ORDER_LOOPS = GET_ORDER_BROKEN.replace('    return state["order"][order_id]', """    while True:  # never returns: the sandbox's call deadline must stop it
        pass""")


def source(stock_fixed: bool, get_order_fixed: bool, broken: str = GET_ORDER_BROKEN) -> str:
    head = HEAD.replace("STOCK\n", STOCK_FIX + "\n" if stock_fixed else "")
    return head + (GET_ORDER_FIXED if get_order_fixed else broken) + CANCEL


def code_reply(src: str, with_data: bool = True) -> str:
    data = json.dumps({"state": STATE, "examples": EXAMPLES}, indent=1)
    text = f"Here is the module.\n\n```python\n{src}```\n"
    return text + (f"\nAnd the seed data:\n\n```json\n{data}\n```\n" if with_data else "")


PROSE = "Sure! I would be happy to help you design that. First, think about what your customers need..."
NEW_CUSTOMER = {"customers": {"c3": {"customer_id": "c3", "name": "Lee Park", "email": "lee@example.com"}}}
NO_TOOL = {
    "hurried": ["What time do you open on Saturdays?", "On Saturdays, what time do you open?"],
    "parent": ["Do you sell helmets for children as well?", "Is it possible to return a bike after a week?"],
}


def chain_of(prompt: str) -> list[str]:
    block = prompt.split("in this order:", 1)[1].split("Entities already", 1)[0]
    return re.findall(r"^- (\w+) \(", block, re.M)


def task_for(chain: list[str]) -> dict:
    """Gold actions for a chain, written against the seed state (and one new customer)."""
    if chain == ["cancel_order", "place_order"]:
        chain = ["place_order", "cancel_order"]  # puts the calls in the order that makes sense: that chain's task
    ctx: dict = {}
    actions, outputs, words, new = [], [], [], {}
    for i, name in enumerate(chain):
        if name == "find_customer":
            new = NEW_CUSTOMER
            actions.append({"name": name, "arguments": {"email": "lee@example.com"}})
            ctx["customer_id"] = "c3"
            words.append("I'm Lee Park, lee@example.com")
        elif name == "list_bikes":
            actions.append({"name": name, "arguments": {}})
            outputs.append("Trail X")
            words.append("what bikes do you have")
        elif name == "get_bike":
            bike = "B-1" if i == 0 else ctx.get("bike_id", "b1")
            actions.append({"name": name, "arguments": {"bike_id": bike}})
            ctx["bike_id"] = "b1"
            outputs.append("450")
            words.append("how much is the Commuter 3")
        elif name == "place_order":
            actions.append({"name": name, "arguments": {"customer_id": ctx.get("customer_id", "c1"),
                                                        "bike_id": ctx.get("bike_id", "b1"), "quantity": 1}})
            ctx["order_id"] = "o3"
            outputs.append("o3")
            words.append("order one Commuter 3 for me")
        elif name == "get_order":
            actions.append({"name": name, "arguments": {"order_id": ctx.get("order_id", "o1")}})
            outputs.append("placed")
            words.append(f"what is the status of order {ctx.get('order_id', 'o1')}")
        elif name == "cancel_order":
            actions.append({"name": name, "arguments": {"order_id": ctx.get("order_id", "o2")}})
            words.append(f"cancel order {ctx.get('order_id', 'o2')}")
    instruction = "Hello! " + ", then ".join(words) + ". Thanks."
    return {"new_entities": new, "actions": actions, "instruction": instruction, "outputs": outputs}


class ToolEnvScript:
    """`hang=True`: the broken get_order loops forever instead of raising KeyError."""

    def __init__(self, hang: bool = False) -> None:
        self.broken = GET_ORDER_LOOPS if hang else GET_ORDER_BROKEN
        self.lock = threading.Lock()
        self.kinds: Counter = Counter()  # prompt kind -> requests
        self.answered: Counter = Counter()  # request body hash -> times answered

    @staticmethod
    def key(body: dict) -> str:
        return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()

    def __call__(self, body: dict, n: int) -> Reply:
        reply = self.reply(body)
        with self.lock:
            self.answered[self.key(body)] += 1
        return reply

    def reply(self, body: dict) -> Reply:
        messages = body["messages"]
        first, last = messages[0]["content"], messages[-1]["content"]
        retry = len(messages) > 1
        kind = first.split("\n", 1)[0]
        with self.lock:
            self.kinds[kind.split()[0] + " " + kind.split()[1] + (" (retry)" if retry else "")] += 1
        if first.startswith("Design the data model"):
            if "parking garage" in first:
                return Reply(PROSE)
            return Reply("```json\n" + json.dumps(DESIGN, indent=1) + "\n```")
        if first.startswith("Implement the tools"):
            return Reply(code_reply(source(stock_fixed=False, get_order_fixed=False, broken=self.broken)))
        if first.startswith("Review the implementation"):
            if STOCK_FIX in first:
                return Reply(json.dumps({"issues": [], "verdict": "ok"}))
            return Reply(json.dumps({"issues": ["place_order records the order but never lowers the bike's stock, "
                                                "so the shop can sell bikes it does not have"], "verdict": "revise"}))
        if first.startswith("Revise the implementation"):
            return Reply(code_reply(source(stock_fixed=True, get_order_fixed=False, broken=self.broken)))
        if first.startswith("Fix the tools"):
            assert "get_order" in last and "KeyError" in last, last[-800:]
            return Reply(code_reply(source(stock_fixed=True, get_order_fixed=True), with_data=False))
        if first.startswith("Write a task for an assistant"):
            chain = chain_of(first)
            if chain == ["list_bikes"]:
                return Reply(PROSE)
            return Reply(json.dumps(task_for(chain)))
        if first.startswith("Write a request to the assistant"):
            who = "hurried" if "hurried" in first else "parent"
            # The wording comes from the request, never its arrival order (a run at concurrency 4
            # and a resumed one at 1 must see the same replies): no-tool draws alternate between
            # the two personas, so a persona's k-th request has draw 2k or 2k+1 (seed = s*1000 + draw).
            i = (body.get("seed", 0) % 1000) // 2
            text = NO_TOOL[who][i % 2]
            return Reply(json.dumps({"instruction": text, "outputs": ["9:00"] if "open" in text else []}))
        return Reply(PROSE)
