"""The catalogue tree's rules (shop.services.categories) on the memory store: admin-only edits, at most
MAX_CATEGORY_DEPTH levels, breadcrumbs and children, a rename, and the moves refused before anything is written.
A move's steps: test_category_moves.py."""

from __future__ import annotations

import pytest

from shop import errors
from shop.limits import MAX_CATEGORY_DEPTH
from shop.services.categories import PHASE_CATEGORIES, PHASE_PRODUCTS, CategoryService
from tests.support.factories import ADMIN, ALICE
from tests.support.memory_store import MemoryStore


@pytest.fixture
def tree(memory: MemoryStore) -> CategoryService:
    """The category service on `memory` (which holds `tools`), with tools/hand/saws below it."""
    service = memory.category_service()
    service.create(ADMIN, slug="hand", name="Hand tools", parent="tools")
    service.create(ADMIN, slug="saws", name="Saws", parent="hand")
    return service


def chain(tree: CategoryService, parent: str, depth: int) -> str:
    """Categories c<depth+1>... below `parent` (at `depth`) down to MAX_CATEGORY_DEPTH; the deepest slug."""
    for level in range(depth + 1, MAX_CATEGORY_DEPTH + 1):
        tree.create(ADMIN, slug=f"c{level}", name=f"Level {level}", parent=parent)
        parent = f"c{level}"
    return parent


def test_a_category_is_created_below_its_parent_with_its_path_and_depth(tree):
    saws = tree.detail("saws")
    assert (saws.path, saws.depth, saws.parent) == ("/tools/hand/saws", 3, "hand")
    assert [(b.slug, b.name) for b in saws.breadcrumbs] == [
        ("tools", "Tools"),
        ("hand", "Hand tools"),
        ("saws", "Saws"),
    ]
    assert saws.children == []
    assert [c.slug for c in tree.detail("tools").children] == ["hand"]
    assert [c.slug for c in tree.top_level(limit=10, next_token=None).items] == ["tools"]


def test_only_an_admin_creates_renames_or_moves(tree, memory):
    with pytest.raises(errors.Forbidden):
        tree.create(ALICE, slug="garden", name="Garden", parent=None)
    with pytest.raises(errors.Forbidden):
        tree.update(ALICE, "hand", {"name": "Hand"})
    with pytest.raises(errors.Forbidden):
        tree.update(ALICE, "hand", {"parent": None})
    assert memory.categories.get("hand").name == "Hand tools"


def test_the_tree_is_at_most_max_category_depth_deep(tree):
    deepest = chain(tree, "tools", 1)
    assert tree.detail(deepest).depth == MAX_CATEGORY_DEPTH
    with pytest.raises(errors.CategoryTooDeep):
        tree.create(ADMIN, slug="too-deep", name="Too deep", parent=deepest)


def test_a_rename_changes_the_name_only_and_the_same_name_writes_nothing(tree, memory):
    _, version = memory.categories.version_of("hand")
    assert tree.update(ADMIN, "hand", {"name": "Hand"}).name == "Hand"
    assert memory.categories.version_of("hand")[1] == version + 1
    assert tree.detail("saws").breadcrumbs[1].name == "Hand"  # breadcrumbs read names live
    tree.update(ADMIN, "hand", {"name": "Hand", "parent": "tools"})  # the same name and parent: nothing to do
    assert memory.categories.version_of("hand")[1] == version + 1


def test_a_category_never_moves_below_itself(tree, memory):
    with pytest.raises(errors.InvalidMove):
        tree.update(ADMIN, "hand", {"parent": "hand"})
    with pytest.raises(errors.InvalidMove):
        tree.update(ADMIN, "hand", {"parent": "saws"})
    assert memory.categories.get("hand").path == "/tools/hand"


def test_a_move_that_would_make_its_subtree_too_deep_is_refused(tree, memory):
    tree.create(ADMIN, slug="garden", name="Garden", parent=None)
    deepest = chain(tree, "garden", 1)
    parent = memory.categories.get(deepest).parent
    assert parent is not None
    with pytest.raises(errors.CategoryTooDeep):
        tree.update(ADMIN, "hand", {"parent": parent})  # hand and saws below a depth-4 parent: 6 levels
    assert memory.categories.get("hand").path == "/tools/hand"


def test_a_move_is_written_with_the_phase_its_subtree_needs():
    store = MemoryStore(streamed_moves=True)
    tree = store.category_service()
    for slug, parent in (("tools", None), ("garden", None), ("hand", "tools"), ("saws", "hand"), ("pots", "garden")):
        tree.create(ADMIN, slug=slug, name=slug.capitalize(), parent=parent)

    moved = tree.update(ADMIN, "hand", {"parent": "garden", "name": "Hand tools"})
    assert (moved.path, moved.parent, moved.name, moved.moving) == ("/garden/hand", "garden", "Hand tools", True)
    assert store.state.move is not None
    assert {k: store.state.move[k] for k in ("slug", "old_path", "new_path", "phase", "step")} == {
        "slug": "hand",
        "old_path": "/tools/hand",
        "new_path": "/garden/hand",
        "phase": PHASE_CATEGORIES,  # saws is below it: re-pathed first
        "step": 0,
    }
    store.state.move = None
    leaf = tree.update(ADMIN, "pots", {"parent": None})
    assert leaf.path == "/pots"
    assert store.state.move is not None
    assert store.state.move["phase"] == PHASE_PRODUCTS  # nothing below it: its products only
