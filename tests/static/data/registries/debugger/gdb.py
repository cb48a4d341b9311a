import subprocess

from debugger.dialogs.base import Dialog


class GdbDialog(Dialog):
    def llm_run(self, command: str) -> str:
        return subprocess.run(["gdb", "-batch", "-ex", command], capture_output=True).stdout
