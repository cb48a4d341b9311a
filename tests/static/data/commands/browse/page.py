class Page:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def text(self) -> str:
        return "\n".join(self.lines)

    def scroll(self, direction: str) -> None:
        self.lines.append(f"scrolled {direction}")

    def click(self, element: str) -> None:
        self.lines.append(f"clicked {element}")

    def type(self, element: str, text: str) -> None:
        self.lines.append(f"typed {text} into {element}")
