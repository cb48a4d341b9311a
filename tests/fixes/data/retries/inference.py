import time

import openai
from openai import OpenAI


def query_model(model_str, prompt, version="1.5", tries=5, timeout=5.0):
    """One provider call per attempt: the branches name different clients."""
    for _ in range(tries):
        try:
            if model_str == "gpt-4o":
                if version == "0.28":
                    completion = openai.ChatCompletion.create(model=model_str, messages=[prompt])
                else:
                    client = OpenAI()
                    completion = client.chat.completions.create(model=model_str, messages=[prompt])
                answer = completion.choices[0].message.content
            elif model_str == "o1":
                client = OpenAI()
                completion = client.chat.completions.create(model="o1", messages=[prompt])
                answer = completion.choices[0].message.content
            else:
                raise ValueError(model_str)
            return answer
        except Exception as e:
            print("Inference Exception:", e)
            time.sleep(timeout)
            continue
    raise Exception("Max retries: timeout")
