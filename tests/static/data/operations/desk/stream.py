from openai import OpenAI

client = OpenAI()


class Printer:
    def text(self, event):
        print(event.delta, end="")

    def usage(self, event):
        print(event.response.usage)


def stream(prompt):
    printer = Printer()
    for event in client.responses.create(model="gpt-4o", input=prompt, stream=True):
        etype = event.type
        if etype == "response.output_text.delta":
            printer.text(event)
        elif etype == "response.completed":
            printer.usage(event)


def confirm(prompt):
    reply = client.chat.completions.create(model="gpt-4o", messages=[prompt])
    answer = reply.choices[0].message.content.strip()
    if answer == "yes":
        Printer().text(answer)
