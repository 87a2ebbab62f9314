"""The catalogue tree: category items, the materialised-path tree partition, and the move job item.

- category ``CATEGORY#<slug>`` / ``CATEGORY``, listed on GSI1 among its parent's children by name
  (``CATEGORY_CHILDREN#<parent>``, or ``TOP_CATEGORIES``); it keeps a ``child_count`` and a ``version``.
- tree entry ``CATEGORY_TREE`` / ``PATH#/coffee/beans``: ``begins_with(SK, PATH#/coffee/)`` is the
  subtree below coffee, in one Query (the tree is small and rarely written: one partition).
- move ``CATEGORY_MOVE`` / ``MOVE``: the one move under way; its stream records drive the rewrite
  (shop.services.category_moves) and its presence refuses a second move or a new category meanwhile.
"""

from __future__ import annotations

from typing import Any

from shop import errors, keys
from shop.limits import MAX_CHILDREN
from shop.models import Page
from shop.models.categories import Category, path_slugs
from shop.repository.queries import gsi1_page
from shop.repository.store import (
    ConditionFailed,
    Table,
    TransactionCancelled,
    conditional_write,
    from_item,
    to_item,
    transact_write,
    translated_errors,
    values,
)

BATCH_GET_LIMIT = 100


def category_item(category: Category) -> dict[str, Any]:
    return {
        **keys.category_key(category.slug),
        **keys.category_children_gsi(category.parent, category.name, category.slug),
        "entity": "CATEGORY",
        **category.model_dump(exclude={"moving"}),
        "version": 1,
        "child_count": 0,
    }


def category_from_item(item: dict[str, Any]) -> Category:
    return Category.model_validate(item)


class CategoryRepository:
    def __init__(self, table: Table) -> None:
        self.table = table

    # -- reads --------------------------------------------------------------------------------------

    def get(self, slug: str) -> Category:
        with translated_errors():
            response = self.table.client.get_item(TableName=self.table.name, Key=to_item(keys.category_key(slug)))
        if "Item" not in response:
            raise errors.CategoryNotFound([slug])
        return category_from_item(from_item(response["Item"]))

    def version_of(self, slug: str) -> tuple[Category, int]:
        """The category and its version (what a conditional change of it is conditional on)."""
        with translated_errors():
            response = self.table.client.get_item(
                TableName=self.table.name, Key=to_item(keys.category_key(slug)), ConsistentRead=True
            )
        if "Item" not in response:
            raise errors.CategoryNotFound([slug])
        item = from_item(response["Item"])
        return category_from_item(item), int(item.get("version", 1))

    def get_many(self, slugs: list[str], *, consistent: bool = False) -> dict[str, Category]:
        """The categories that exist, by slug: one BatchGetItem per 100 (more only for keys DynamoDB left
        unprocessed)."""
        wanted = list(dict.fromkeys(slugs))
        found: dict[str, Category] = {}
        for start in range(0, len(wanted), BATCH_GET_LIMIT):
            self._get_batch(wanted[start : start + BATCH_GET_LIMIT], found, consistent)
        return found

    def _get_batch(self, slugs: list[str], found: dict[str, Category], consistent: bool) -> None:
        request: dict[str, Any] = {
            self.table.name: {
                "Keys": [to_item(keys.category_key(s)) for s in slugs],
                **({"ConsistentRead": True} if consistent else {}),
            }
        }
        while request:
            with translated_errors():
                response = self.table.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table.name, []):
                category = category_from_item(from_item(item))
                found[category.slug] = category
            request = response.get("UnprocessedKeys") or {}

    def children(self, parent: str | None, *, limit: int, next_token: str | None) -> Page[Category]:
        """A category's children (or the top-level categories), by name: one Query."""
        return gsi1_page(
            self.table,
            scope=f"categories:{parent or ''}",
            partition=keys.category_children_pk(parent),
            limit=limit,
            next_token=next_token,
            newest_first=False,
        ).as_page(category_from_item)

    def subtree_paths(self, path: str, *, limit: int | None = None) -> list[str]:
        """The paths of the categories strictly below `path` (all, or the first `limit`), in path order:
        Query ``CATEGORY_TREE`` AND ``begins_with(SK, PATH#<path>/)``."""
        found: list[str] = []
        params: dict[str, Any] = {
            "TableName": self.table.name,
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :prefix)",
            "ExpressionAttributeValues": values(pk=keys.CATEGORY_TREE_PK, prefix=keys.subtree_prefix(path)),
        }
        if limit is not None:
            params["Limit"] = limit
        while True:
            with translated_errors():
                response = self.table.client.query(**params)
            found += [
                str(from_item(item)[keys.SK]).removeprefix(keys.PATH_PREFIX) for item in response.get("Items", [])
            ]
            last = response.get("LastEvaluatedKey")
            if last is None or limit is not None:
                return found
            params["ExclusiveStartKey"] = last

    # -- writes -------------------------------------------------------------------------------------

    def _no_move(self) -> dict[str, Any]:
        return {
            "ConditionCheck": {
                "TableName": self.table.name,
                "Key": to_item(keys.category_move_key()),
                "ConditionExpression": "attribute_not_exists(PK)",
            }
        }

    def _adopt(self, parent: Category) -> dict[str, Any]:
        """The parent counts one more child, conditional on it being where it was read and not full."""
        return {
            "Update": {
                "TableName": self.table.name,
                "Key": to_item(keys.category_key(parent.slug)),
                "UpdateExpression": "ADD child_count :one",
                "ConditionExpression": (
                    "attribute_exists(PK) AND #path = :path AND (attribute_not_exists(child_count) OR child_count < :max)"
                ),
                "ExpressionAttributeNames": {"#path": "path"},
                "ExpressionAttributeValues": values(one=1, path=parent.path, max=MAX_CHILDREN),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            }
        }

    def _explain_parent(self, parent: Category, cancelled: TransactionCancelled, index: int) -> errors.DomainError:
        old = cancelled.old_item(index)
        if old is None:
            return errors.CategoryNotFound([parent.slug])
        if int(old.get("child_count", 0)) >= MAX_CHILDREN:
            return errors.TooManyChildren(
                f"a category holds at most {MAX_CHILDREN} children", {"parent": f"{parent.slug} is full"}
            )
        return errors.Conflict("the parent category moved meanwhile, retry")

    def create(self, category: Category, parent: Category | None) -> Category:
        """Category, tree entry, the parent's child count: one transaction, refused while a move runs."""
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item(category_item(category)),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item({**keys.category_tree_key(category.path), "slug": category.slug}),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            self._no_move(),
        ]
        if parent is not None:
            items.append(self._adopt(parent))
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0):
                raise errors.CategoryExists(f"category {category.slug} exists") from cancelled
            if cancelled.failed_condition(2):
                raise errors.MoveInProgress("a category move is under way, retry when it is done") from cancelled
            if parent is not None and cancelled.failed_condition(3):
                raise self._explain_parent(parent, cancelled, 3) from cancelled
            raise cancelled.unexplained() from cancelled
        return category

    def rename(self, current: Category, version: int, name: str) -> Category:
        """The new name (and its place among the parent's children), conditional on the version read."""
        gsi = keys.category_children_gsi(current.parent, name, current.slug)
        try:
            with conditional_write():
                response = self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.category_key(current.slug)),
                    UpdateExpression="SET #name = :name, GSI1SK = :gsk, version = :next",
                    ConditionExpression="version = :seen",
                    ExpressionAttributeNames={"#name": "name"},
                    ExpressionAttributeValues=values(name=name, gsk=gsi[keys.GSI1SK], next=version + 1, seen=version),
                    ReturnValues="ALL_NEW",
                )
        except ConditionFailed as failed:
            raise errors.Conflict("the category changed meanwhile, retry") from failed
        return category_from_item(from_item(response["Attributes"]))

    def start_move(
        self,
        current: Category,
        version: int,
        *,
        new_parent: Category | None,
        name: str,
        move: dict[str, Any],
    ) -> Category:
        """Move one category under `new_parent` and record the move whose stream records rewrite the rest.

        One transaction: the category's parent, path, depth, children-listing key and `moving` flag
        (conditional on its version), its tree entry (old deleted, new put), both parents' child counts,
        and the move item (`attribute_not_exists`: one move at a time)."""
        new_path = str(move["new_path"])
        gsi = keys.category_children_gsi(new_parent.slug if new_parent else None, name, current.slug)
        name_set: dict[str, Any] = {
            "parent": new_parent.slug if new_parent else None,
            "path": new_path,
            "depth": len(path_slugs(new_path)),
            "name": name,
        }
        set_parts = [f"#{field} = :{field}" for field, value in name_set.items() if value is not None]
        remove = " REMOVE #parent" if new_parent is None else ""
        items: list[dict[str, Any]] = [
            {
                "Update": {
                    "TableName": self.table.name,
                    "Key": to_item(keys.category_key(current.slug)),
                    "UpdateExpression": "SET "
                    + ", ".join(
                        [
                            *set_parts,
                            "GSI1PK = :gpk",
                            "GSI1SK = :gsk",
                            "moving = :true",
                            "move_id = :move",
                            "version = :next",
                        ]
                    )
                    + remove,
                    "ConditionExpression": "version = :seen",
                    "ExpressionAttributeNames": {f"#{field}": field for field in name_set},
                    "ExpressionAttributeValues": values(
                        **{k: v for k, v in name_set.items() if v is not None},
                        gpk=gsi[keys.GSI1PK],
                        gsk=gsi[keys.GSI1SK],
                        true=True,
                        move=move["move_id"],
                        next=version + 1,
                        seen=version,
                    ),
                }
            },
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item({"entity": "CATEGORY_MOVE", **keys.category_move_key(), **move}),
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {"Delete": {"TableName": self.table.name, "Key": to_item(keys.category_tree_key(current.path))}},
            {
                "Put": {
                    "TableName": self.table.name,
                    "Item": to_item({**keys.category_tree_key(new_path), "slug": current.slug}),
                }
            },
        ]
        if current.parent is not None:
            items.append(
                {
                    "Update": {
                        "TableName": self.table.name,
                        "Key": to_item(keys.category_key(current.parent)),
                        "UpdateExpression": "ADD child_count :minus",
                        "ExpressionAttributeValues": values(minus=-1),
                    }
                }
            )
        if new_parent is not None:
            items.append(self._adopt(new_parent))
        try:
            transact_write(self.table, items)
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0):
                raise errors.Conflict("the category changed meanwhile, retry") from cancelled
            if cancelled.failed_condition(1):
                raise errors.MoveInProgress("a category move is under way, retry when it is done") from cancelled
            if new_parent is not None and cancelled.failed_condition(len(items) - 1):
                raise self._explain_parent(new_parent, cancelled, len(items) - 1) from cancelled
            raise cancelled.unexplained() from cancelled
        return current.model_copy(
            update={
                "parent": name_set["parent"],
                "path": new_path,
                "depth": name_set["depth"],
                "name": name,
                "moving": True,
            }
        )

    # -- the move job's writes (shop.services.category_moves) ----------------------------------------

    def repath(self, paths: list[str], old_prefix: str, new_prefix: str) -> None:
        """Re-path categories below a moved one: tree entry moved, path and depth rewritten, in one
        transaction (idempotent: a replay finds them moved and writes the same values)."""
        items: list[dict[str, Any]] = []
        for old in paths:
            new = new_prefix + old.removeprefix(old_prefix)
            slug = path_slugs(old)[-1]
            items += [
                {"Delete": {"TableName": self.table.name, "Key": to_item(keys.category_tree_key(old))}},
                {"Put": {"TableName": self.table.name, "Item": to_item({**keys.category_tree_key(new), "slug": slug})}},
                {
                    "Update": {
                        "TableName": self.table.name,
                        "Key": to_item(keys.category_key(slug)),
                        "UpdateExpression": "SET #path = :path, #depth = :depth",
                        "ConditionExpression": "attribute_exists(PK)",
                        "ExpressionAttributeNames": {"#path": "path", "#depth": "depth"},
                        "ExpressionAttributeValues": values(path=new, depth=len(path_slugs(new))),
                    }
                },
            ]
        if items:
            try:
                transact_write(self.table, items)
            except TransactionCancelled as cancelled:
                raise cancelled.unexplained() from cancelled

    def advance_move(self, move_id: str, step: int, changes: dict[str, Any]) -> bool:
        """The move's next step (its MODIFY record runs it); False when this step was taken already."""
        sets = {**changes, "step": step + 1}
        try:
            with conditional_write():
                self.table.client.update_item(
                    TableName=self.table.name,
                    Key=to_item(keys.category_move_key()),
                    UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in sets),
                    ConditionExpression="move_id = :id AND step = :seen",
                    ExpressionAttributeNames={f"#{k}": k for k in sets},
                    ExpressionAttributeValues=values(**sets, id=move_id, seen=step),
                )
        except ConditionFailed:
            return False
        return True

    def finish_move(self, move_id: str, step: int, slug: str) -> bool:
        """The category no longer `moving` and the move item gone: one transaction; False if done already."""
        try:
            transact_write(
                self.table,
                [
                    {
                        "Delete": {
                            "TableName": self.table.name,
                            "Key": to_item(keys.category_move_key()),
                            "ConditionExpression": "move_id = :id AND step = :seen",
                            "ExpressionAttributeValues": values(id=move_id, seen=step),
                        }
                    },
                    {
                        "Update": {
                            "TableName": self.table.name,
                            "Key": to_item(keys.category_key(slug)),
                            "UpdateExpression": "REMOVE moving, move_id",
                            "ConditionExpression": "move_id = :id",
                            "ExpressionAttributeValues": values(id=move_id),
                        }
                    },
                ],
            )
        except TransactionCancelled as cancelled:
            if cancelled.failed_condition(0):
                return False
            raise cancelled.unexplained() from cancelled
        return True

    def listing_keys_page(
        self, slug: str, *, limit: int, cursor: dict[str, Any] | None
    ) -> tuple[list[str], dict[str, Any] | None]:
        """The product ids of one page of a category's name listing, and where the next page starts
        (DynamoDB's own LastEvaluatedKey: the move item keeps it, nothing a client sees)."""
        params: dict[str, Any] = {
            "TableName": self.table.name,
            "IndexName": keys.GSI1,
            "KeyConditionExpression": "#pk = :pk",
            "ExpressionAttributeNames": {"#pk": keys.GSI1PK, "#id": "product_id"},
            "ExpressionAttributeValues": values(pk=keys.listing_pk(slug, keys.BY_NAME)),
            "ProjectionExpression": "#id",
            "Limit": limit,
        }
        if cursor:
            params["ExclusiveStartKey"] = to_item(cursor)
        with translated_errors():
            response = self.table.client.query(**params)
        last = response.get("LastEvaluatedKey")
        return [str(from_item(item)["product_id"]) for item in response.get("Items", [])], (
            from_item(last) if last else None
        )
