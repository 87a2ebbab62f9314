from __future__ import annotations

from pydantic import BaseModel


class Customer(BaseModel):
    customer_id: str
    email: str
    name: str
    created_at: str
    updated_at: str
