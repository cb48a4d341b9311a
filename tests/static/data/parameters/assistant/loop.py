import json


def converse(client, tools, prompt, model="gpt-4.1"):
    items = [{"role": "user", "content": prompt}]
    while True:
        response = client.responses.create(model=model, input=items, tools=tools.specs())
        calls = [i for i in response.output if i.type == "function_call"]
        if not calls:
            return response.output_text
        items += response.output
        for item in calls:
            out = tools.call(item.name, json.loads(item.arguments))
            items.append({"type": "function_call_output", "call_id": item.call_id, "output": str(out)})
