from actions import order_status, refund_order
from autogen import ConversableAgent, LLMConfig

llm_config = LLMConfig(api_type="openai", model="gpt-4.1-mini")

support = ConversableAgent(
    name="support",
    llm_config=llm_config,
    functions=[refund_order, order_status],
)
