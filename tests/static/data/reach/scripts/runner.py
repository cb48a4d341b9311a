from chatter import Chatter, Clock


class Runner:
    def __init__(self):
        self.chatter = Chatter()
        self.clock = Clock()

    def talk(self, messages):
        while True:
            self.chatter(messages)

    def tick(self):
        while True:
            self.clock()
