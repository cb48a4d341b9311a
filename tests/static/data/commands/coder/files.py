import os


def read_file(path: str) -> str:
    with open(path) as handle:
        return handle.read()


def list_dir(path: str) -> list[str]:
    return os.listdir(path)
