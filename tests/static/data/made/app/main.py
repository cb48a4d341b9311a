from app.build import build_agent


def search(query: str) -> str:
    """Search the notes."""
    return query


def send_mail(to: str, body: str) -> str:
    """Send a mail."""
    return to


def unused(x: str) -> str:
    """Never handed to a model."""
    return x


NOTES_TOOLS = [search]


def main() -> None:
    build_agent("openai:gpt-4o", NOTES_TOOLS)
    build_agent("openai:gpt-4o", tools=[send_mail])
