import re


def extract_action(text: str) -> str:
    found = re.findall(r"```bash\n(.*?)\n```", text, re.DOTALL)
    return found[0].strip() if found else ""
