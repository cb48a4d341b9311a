class Registry:
    """Actions registered by a decorator of the instance, or by a call of ``add``."""

    def __init__(self) -> None:
        self.actions: dict = {}

    def action(self, description: str):
        def decorator(func):
            self.actions[func.__name__] = func
            return func

        return decorator

    def add(self, name: str, func) -> None:
        self.actions[name] = func

    async def execute(self, name: str, params: dict):
        return await self.actions[name](**params)


class Cache:
    """Stores what it is given; nothing the model names is looked up in it."""

    def __init__(self) -> None:
        self.data: dict = {}

    def put(self, key: str, value) -> None:
        self.data[key] = value

    def get(self, key: str):
        return self.data[key]()
