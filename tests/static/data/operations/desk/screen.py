import subprocess


class Screen:
    def type_text(self, text):
        subprocess.run(["xdotool", "type", text], check=True)

    def click(self, where):
        subprocess.run(["xdotool", "mousemove", str(where["x"]), str(where["y"]), "click", "1"])

    def scroll(self, amount):
        subprocess.run(["xdotool", "click", "4" if amount > 0 else "5"], check=True)
