from .notes import record


def replay(batches):
    while batches:
        record(batches.pop())
