import subprocess


def cancel_order(order_id: str) -> str:
    return subprocess.run(["cancel", order_id], capture_output=True, text=True).stdout
