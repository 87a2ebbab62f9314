from __future__ import annotations

from pydantic import BaseModel


class Review(BaseModel):
    product_id: str
    customer_id: str
    rating: int
    title: str
    body: str
    created_at: str
