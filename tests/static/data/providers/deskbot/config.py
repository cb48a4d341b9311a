from deskbot.llm import HostedProvider

planner = HostedProvider()
