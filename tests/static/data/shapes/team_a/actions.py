def refund_order(order_id: str) -> str:
    return f"refunded {order_id}"


def order_status(order_id: str) -> str:
    return f"{order_id}: shipped"
