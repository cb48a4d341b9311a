"""A loop in a function that gets its session as an unannotated parameter."""

import litellm


def respond(session) -> None:
    while True:
        try:
            session.model.query(session.messages)
        except litellm.RateLimitError:
            continue
