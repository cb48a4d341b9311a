import sys

from agentx.model import make_model
from agentx.react import ReActAgent


def main():
    agent = ReActAgent(make_model({"model": "llama3"}))
    print(agent.loop(sys.argv[1]))


if __name__ == "__main__":
    main()
