class Tool:
    name = ""

    def schema(self) -> dict:
        return {"name": self.name}

    def run(self, **kwargs: object) -> str:
        raise NotImplementedError
