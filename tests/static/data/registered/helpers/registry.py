TOOLS = {}
ROUTES = []


def tool(func):
    TOOLS[func.__name__] = func
    return func


def route(func):
    ROUTES.append(func)
    return func
