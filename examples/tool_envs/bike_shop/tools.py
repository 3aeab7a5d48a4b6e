"""Tools of a small bike shop: customers, a product catalogue with stock, orders, service bookings.

State (state.json): {"customers": {id: {...}}, "products": {sku: {...}},
"orders": {id: {...}}, "services": {id: {...}}, "counters": {"order": n, "service": n}}.
Ids come from counters in the state, so the same calls always make the same ids.
"""

from rlclimb_tools import tool

SERVICE_PRICES = {"tune_up": 60.0, "brake_bleed": 35.0, "wheel_true": 25.0}


def _next_id(state, kind, prefix):
    state["counters"][kind] += 1
    return f"{prefix}{state['counters'][kind]:04d}"


@tool(kind="read")
def find_customer(state, email: str) -> str:
    """Find a customer's id by email address.

    Args:
        email: The customer's email, such as 'ana@example.com'.
    """
    for cid, c in state["customers"].items():
        if c["email"].lower() == email.strip().lower():
            return cid
    return "Error: no customer with that email"


@tool(kind="read")
def get_customer(state, customer_id: str) -> dict | str:
    """Get a customer's profile: name, email, store credit and order ids.

    Args:
        customer_id: The customer id, such as 'c001'.
    """
    if customer_id not in state["customers"]:
        return "Error: customer not found"
    return state["customers"][customer_id]


@tool(kind="read")
def search_products(
    state, query: str = "", category: str = "", in_stock_only: bool = False
) -> list:
    """Search the catalogue by words in the name and/or by category.

    Args:
        query: Words that must all appear in the product name (case-insensitive).
        category: One of 'bike', 'part', 'accessory'; empty for all.
        in_stock_only: Only list products with stock above zero.
    """
    words = query.lower().split()
    found = []
    for sku, p in sorted(state["products"].items()):
        if category and p["category"] != category:
            continue
        if in_stock_only and p["stock"] <= 0:
            continue
        if all(w in p["name"].lower() for w in words):
            found.append({"sku": sku, "name": p["name"], "price": p["price"], "stock": p["stock"]})
    return found


@tool(kind="read")
def get_product(state, sku: str) -> dict | str:
    """Get one product's details, stock included.

    Args:
        sku: The product's SKU, such as 'BK-ROAD-54'.
    """
    return state["products"].get(sku, "Error: product not found")


@tool(kind="write")
def restock_product(state, sku: str, quantity: int) -> dict | str:
    """Add received units to a product's stock.

    Args:
        sku: The product's SKU.
        quantity: Units received (positive).
    """
    if sku not in state["products"]:
        return "Error: product not found"
    if quantity <= 0:
        return "Error: quantity must be positive"
    state["products"][sku]["stock"] += quantity
    return state["products"][sku]


@tool(kind="write")
def place_order(
    state, customer_id: str, items: list[dict], use_store_credit: bool = False
) -> dict | str:
    """Place an order; stock is reserved at once. Store credit pays first when asked.

    Args:
        customer_id: The customer id.
        items: Line items, each {"sku": str, "quantity": int}.
        use_store_credit: Pay with the customer's store credit first.
    """
    customer = state["customers"].get(customer_id)
    if customer is None:
        return "Error: customer not found"
    if not items:
        return "Error: an order needs at least one item"
    lines, total = [], 0.0
    for item in items:
        p = state["products"].get(item.get("sku"))
        qty = item.get("quantity", 1)
        if p is None:
            return f"Error: product {item.get('sku')} not found"
        if not isinstance(qty, int) or qty <= 0:
            return "Error: quantity must be a positive integer"
        if p["stock"] < qty:
            return f"Error: only {p['stock']} of {item['sku']} in stock"
        lines.append({"sku": item["sku"], "quantity": qty, "unit_price": p["price"]})
        total += p["price"] * qty
    for line in lines:
        state["products"][line["sku"]]["stock"] -= line["quantity"]
    credit = min(customer["store_credit"], total) if use_store_credit else 0.0
    customer["store_credit"] = round(customer["store_credit"] - credit, 2)
    order_id = _next_id(state, "order", "o")
    order = {
        "customer_id": customer_id,
        "items": lines,
        "total": round(total, 2),
        "paid_with_credit": round(credit, 2),
        "status": "placed",
    }
    state["orders"][order_id] = order
    customer["orders"].append(order_id)
    return {"order_id": order_id, **order}


@tool(kind="read")
def get_order(state, order_id: str) -> dict | str:
    """Get an order's items, total and status.

    Args:
        order_id: The order id, such as 'o0001'.
    """
    return state["orders"].get(order_id, "Error: order not found")


@tool(kind="write")
def cancel_order(state, order_id: str, reason: str) -> dict | str:
    """Cancel a placed (not yet picked up) order: stock goes back, credit is refunded.

    Args:
        order_id: The order id.
        reason: Why the customer cancels, in a few words.
    """
    order = state["orders"].get(order_id)
    if order is None:
        return "Error: order not found"
    if order["status"] != "placed":
        return f"Error: order is {order['status']}, only placed orders can be cancelled"
    for line in order["items"]:
        state["products"][line["sku"]]["stock"] += line["quantity"]
    customer = state["customers"][order["customer_id"]]
    customer["store_credit"] = round(customer["store_credit"] + order["paid_with_credit"], 2)
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    return order


@tool(kind="write")
def book_service(state, customer_id: str, service: str, date: str) -> dict | str:
    """Book a workshop service for a customer's bike.

    Args:
        customer_id: The customer id.
        service: One of 'tune_up', 'brake_bleed', 'wheel_true'.
        date: The day, as YYYY-MM-DD.
    """
    if customer_id not in state["customers"]:
        return "Error: customer not found"
    if service not in SERVICE_PRICES:
        return f"Error: unknown service; offered: {', '.join(SERVICE_PRICES)}"
    taken = sum(
        1 for s in state["services"].values() if s["date"] == date and s["status"] == "booked"
    )
    if taken >= state["workshop_slots_per_day"]:
        return "Error: the workshop is full that day"
    service_id = _next_id(state, "service", "s")
    booking = {
        "customer_id": customer_id,
        "service": service,
        "date": date,
        "price": SERVICE_PRICES[service],
        "status": "booked",
    }
    state["services"][service_id] = booking
    return {"service_id": service_id, **booking}


@tool(kind="write")
def add_store_credit(state, customer_id: str, amount: float, reason: str) -> dict | str:
    """Give a customer store credit (a goodwill gesture, at most 50 per call).

    Args:
        customer_id: The customer id.
        amount: Credit to add, more than 0 and at most 50.
        reason: Why, in a few words.
    """
    customer = state["customers"].get(customer_id)
    if customer is None:
        return "Error: customer not found"
    if not 0 < amount <= 50:
        return "Error: amount must be more than 0 and at most 50"
    customer["store_credit"] = round(customer["store_credit"] + amount, 2)
    customer.setdefault("credit_log", []).append({"amount": amount, "reason": reason})
    return customer


@tool(kind="read")
def calculate(state, expression: str) -> str:
    """Evaluate an arithmetic expression with + - * / and parentheses.

    Args:
        expression: Such as '2 * (3.5 + 4)'.
    """
    if not set(expression) <= set("0123456789.+-*/() "):
        return "Error: only numbers, + - * / and parentheses"
    try:
        return str(round(eval(expression, {"__builtins__": {}}, {}), 2))
    except Exception as e:
        return f"Error: {e}"
