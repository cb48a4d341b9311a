"""The operations: nothing here imports a model or tool framework."""


def refund(context: dict, charge: str) -> dict:
    return {"refunded": charge}


def list_charges(context: dict) -> list:
    return []
