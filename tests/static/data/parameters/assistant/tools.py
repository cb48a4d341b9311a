import os
import shutil


class FileTools:
    """Tools the assistant may call; each public method is one tool."""

    def __init__(self, root):
        self.root = root

    def tool_list_dir(self, path="."):
        return os.listdir(os.path.join(self.root, path))

    def tool_delete(self, path):
        shutil.rmtree(os.path.join(self.root, path))
        return "deleted"

    def specs(self):
        return [
            {"type": "function", "name": n[5:], "parameters": {"type": "object"}}
            for n in dir(self)
            if n.startswith("tool_")
        ]

    def call(self, name, arguments):
        method = getattr(self, f"tool_{name}", None)
        if method is None:
            return f"no tool {name}"
        return method(**arguments)
