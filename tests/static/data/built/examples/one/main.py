from crew.agent import Agent


def lookup(order_id):
    return f"order {order_id}: shipped"


def restart(service):
    return f"restarted {service}"


def greeting():
    return "Answer briefly."


if __name__ == "__main__":
    Agent("ops", [lookup, restart], notes=[greeting]).run([])
