from crew.worker import Worker


def search(query):
    return f"results for {query}"


def lookup(order_id):
    return order_id


if __name__ == "__main__":
    Worker(name="searcher", functions=[search]).step([])
