from autogen import ConversableAgent, register_function


def wipe_cache(region: str) -> str:
    return f"wiped {region}"


assistant = ConversableAgent(name="assistant", llm_config={"model": "gpt-4.1-mini"})
runner = ConversableAgent(name="runner", llm_config=False)
register_function(wipe_cache, caller=assistant, executor=runner, description="wipe a cache")
