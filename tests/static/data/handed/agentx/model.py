import requests


class OllamaModel:
    def __init__(self, host="http://localhost:11434", name="llama3"):
        self.host = host
        self.name = name

    def generate(self, messages):
        r = requests.post(f"{self.host}/api/chat", json={"model": self.name, "messages": messages, "stream": False})
        r.raise_for_status()
        return r.json()["message"]["content"]


def make_model(cfg):
    return OllamaModel(cfg.get("host", "http://localhost:11434"), cfg["model"])
