import os

from helpers.registry import route, tool


@tool
def read_file(path):
    with open(path) as handle:
        return handle.read()


@tool
def remove_file(path):
    os.remove(path)
    return "removed"


@route
def index():
    return "ok"
