from .catalog import lookup_price
from .orders import cancel_order

TOOLS = [lookup_price, cancel_order]
