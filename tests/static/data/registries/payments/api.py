import json

from .operations import list_charges, refund


class Api:
    def __init__(self) -> None:
        self._dispatch = {"refund": refund, "list_charges": list_charges}

    def run(self, method: str, **kwargs: object) -> str:
        function = self._dispatch[method]
        return json.dumps(function({}, **kwargs))
