from openai import OpenAI

from assistant.loop import converse
from assistant.tools import FileTools

if __name__ == "__main__":
    print(converse(OpenAI(), FileTools("/srv"), "tidy up"))
