# pydantic (1.x on Debian 12, 2.x on Debian 13): validate and coerce an LLM's JSON output into a model.
import json
from typing import List, Optional

from pydantic import BaseModel, ValidationError, validator

class Item(BaseModel):
    name: str
    qty: int
    price: float

class Order(BaseModel):
    id: int
    customer: str
    items: List[Item]
    note: Optional[str] = None

    @validator('customer')
    def strip(cls, v):
        return v.strip()

raw = '{"id": "17", "customer": "  Ada ", "items": [{"name": "tea", "qty": "2", "price": 3.5}]}'
order = Order(**json.loads(raw))
assert order.id == 17 and order.customer == 'Ada' and order.items[0].qty == 2
assert sum(i.qty * i.price for i in order.items) == 7.0
dumped = order.model_dump() if hasattr(order, 'model_dump') else order.dict()
assert dumped['items'][0] == {'name': 'tea', 'qty': 2, 'price': 3.5} and dumped['note'] is None
try:
    Order(id='x', customer='b', items=[])
except ValidationError as e:
    assert e.errors()[0]['loc'] == ('id',), e.errors()
else:
    raise AssertionError('an invalid order validated')
print('order', order.id, order.customer)
print('CORPUS-OK pydantic_model')
