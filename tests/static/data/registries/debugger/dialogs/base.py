"""A namespace subpackage (no __init__.py): imported as debugger.dialogs.base."""

from debugger.assistant import Assistant


class Dialog:
    def llm_run(self, command: str) -> str:
        return command

    def llm_source(self, path: str) -> str:
        return open(path).read()

    def functions(self) -> list:
        found = [self.llm_run]
        if self.has_sources():
            found.append(self.llm_source)
        return found

    def has_sources(self) -> bool:
        return True

    def start(self) -> Assistant:
        return Assistant("debug", functions=self.functions())
