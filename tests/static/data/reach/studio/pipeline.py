from .llm import complete, make_brain
from .util import log


class Pipeline:
    def __init__(self):
        self.step = complete

    def run(self, messages):
        while True:
            self.step(messages)


def drive(step, messages):
    while True:
        step(messages)


def main(messages):
    drive(complete, messages)


def factory_loop(messages):
    brain = make_brain()
    while True:
        brain(messages)


def tail(messages):
    echo = log
    while messages:
        echo(messages.pop())
