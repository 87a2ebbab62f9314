"""Bodies of the customers function (shared parts in shop.http_api.schemas)."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field, model_validator

from shop.http_api.schemas import EMAIL_PATTERN, MISSING, PYTHON_REGEX, Body
from shop.limits import MAX_EMAIL_LENGTH
from shop.models import Customer, Notification
from shop.models.common import Model

Email = Annotated[str, Field(min_length=3, max_length=MAX_EMAIL_LENGTH, pattern=EMAIL_PATTERN)]
CustomerName = Annotated[str, Field(min_length=1, max_length=200)]


class CustomerIn(Body):
    model_config = PYTHON_REGEX

    email: Email
    name: CustomerName


class CustomerPatch(Body):
    """At least one of the fields; neither may be null."""

    model_config = ConfigDict(**PYTHON_REGEX, json_schema_extra={"minProperties": 1})

    email: Email | MISSING = MISSING
    name: CustomerName | MISSING = MISSING

    @model_validator(mode="after")
    def _something(self) -> CustomerPatch:
        if not self.model_fields_set:
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
