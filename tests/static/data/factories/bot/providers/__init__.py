from .claude import ClaudeProvider


def get_provider(name, cfg):
    if name == "claude":
        return ClaudeProvider(cfg)
    raise ValueError(name)
