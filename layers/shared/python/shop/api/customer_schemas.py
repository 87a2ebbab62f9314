"""Bodies of the customers function (shared parts in shop.api.schemas)."""

from __future__ import annotations

from pydantic import Field, model_validator

from shop.api.schemas import EMAIL_PATTERN, Body
from shop.models import Customer, Notification
from shop.models.common import Model


class CustomerIn(Body):
    email: str = Field(min_length=3, max_length=254, pattern=EMAIL_PATTERN)
    name: str = Field(min_length=1, max_length=200)


class CustomerPatch(Body):
    email: str | None = Field(default=None, min_length=3, max_length=254, pattern=EMAIL_PATTERN)
    name: str | None = Field(default=None, min_length=1, max_length=200)

    @model_validator(mode="after")
    def _something(self) -> CustomerPatch:
        if self.email is None and self.name is None:
            raise ValueError("give at least one of email, name")
        return self


class NotificationPage(Model):
    items: list[Notification]
    next_token: str | None


__all__ = [
    "Customer",
    "CustomerIn",
    "CustomerPatch",
    "Notification",
    "NotificationPage",
]
