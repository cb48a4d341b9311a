def transfer(account: str, amount: float) -> str:
    """Transfer money."""
    return f"sent {amount} to {account}"
