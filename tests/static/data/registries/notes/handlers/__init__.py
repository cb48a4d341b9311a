from .search import handle_search
from .write import handle_append

__all__ = ["handle_append", "handle_search"]
