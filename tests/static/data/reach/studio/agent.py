from .llm import Brain


class Base:
    def __init__(self, brain: Brain):
        self.brain = brain


class Writer(Base):
    def run(self, messages):
        while True:
            self.brain(messages)
