from __future__ import annotations

from pydantic import Field

from shop.models.common import Model, Timestamp


class Customer(Model):
    customer_id: str
    email: str
    name: str
    version: int = Field(description="starts at 1, +1 on every change; the ETag is this number, quoted")
    created_at: Timestamp
    updated_at: Timestamp
