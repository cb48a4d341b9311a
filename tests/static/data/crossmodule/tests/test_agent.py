import litellm


def test_loop():
    while True:
        litellm.completion(model="m", messages=[])
