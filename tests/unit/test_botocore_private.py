"""What the shop's clients use of botocore's private shape (shop.runtime.botocore_clients.BOTOCORE_PRIVATE) keeps
the shape they rely on, and botocore still calls it.

A botocore release that renames, reshapes or stops calling one fails here, naming which, before a client is built
with botocore's whole endpoints file or its listing of every service again (or not at all).
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import textwrap
from typing import Any

import pytest
from botocore.loaders import Loader

from shop.runtime import botocore_clients

# botocore's `Loader.load_service_model`, less its docstring: ServiceFolderLoader.load_service_model is a copy of it
# without the listing of every service. When botocore changes it, make the copy do what it does, then update this.
LOAD_SERVICE_MODEL_DIGEST = "84a4607c55a53913"


def _owner_and_name(dotted: str) -> tuple[Any, str]:
    """The class (or, for a module's function such as `botocore.loaders.instance_cache`, the module) and the name."""
    owner, name = dotted.rsplit(".", 1)
    try:
        return importlib.import_module(owner), name
    except ImportError:
        module, cls = owner.rsplit(".", 1)
        return getattr(importlib.import_module(module), cls), name


def _undecorated(function: Any, name: str) -> Any:
    """The function `name` itself: `Loader.load_service_model` is wrapped by botocore's `instance_cache` (no
    functools.wraps), which keeps it in its closure."""
    for cell in getattr(function, "__closure__", None) or ():
        if inspect.isfunction(cell.cell_contents) and cell.cell_contents.__name__ == name:
            return cell.cell_contents
    return function


def _body_digest(function: Any) -> str:
    node = ast.parse(textwrap.dedent(inspect.getsource(function))).body[0]
    assert isinstance(node, ast.FunctionDef)
    node.decorator_list = []
    if ast.get_docstring(node) is not None:
        node.body = node.body[1:]
    return hashlib.sha256(ast.dump(node).encode()).hexdigest()[:16]


@pytest.mark.parametrize("dotted", sorted(botocore_clients.BOTOCORE_PRIVATE))
def test_each_private_name_has_the_pinned_shape(dotted):
    owner, name = _owner_and_name(dotted)
    pinned = botocore_clients.BOTOCORE_PRIVATE[dotted]
    if pinned.startswith("("):
        assert name in vars(owner), f"botocore changed: {dotted} is gone"
        theirs = str(inspect.signature(_undecorated(getattr(owner, name), name)))
        assert theirs == pinned, f"botocore changed {dotted}: {theirs} (pinned {pinned})"
    else:
        instance = owner()
        assert hasattr(instance, name), f"botocore changed: {dotted} is gone"
        held = type(getattr(instance, name))
        assert f"{held.__module__}.{held.__qualname__}" == pinned, f"botocore changed {dotted}: now a {held}"


def test_instance_cache_still_keeps_each_answer_in_the_loaders_cache():
    from botocore.loaders import instance_cache

    source = inspect.getsource(instance_cache)
    assert "self._cache[key]" in source, (
        "botocore changed instance_cache: it no longer keeps answers in the instance's `_cache`, which "
        "ServiceFolderLoader.load_service_model relies on as botocore's Loader does"
    )
    loader = botocore_clients._loader(None)
    model = loader.load_service_model("dynamodb", "service-2")
    assert loader.load_service_model("dynamodb", "service-2") is model, "the loader no longer caches a model"


def test_the_copied_load_service_model_is_still_botocores():
    theirs = _body_digest(_undecorated(Loader.load_service_model, "load_service_model"))
    assert theirs == LOAD_SERVICE_MODEL_DIGEST, (
        f"botocore changed Loader.load_service_model ({theirs}): shop.runtime.botocore_clients' ServiceFolderLoader "
        "copies it without the listing; make the copy match, then update LOAD_SERVICE_MODEL_DIGEST"
    )


@pytest.mark.parametrize(
    ("service", "type_name"),
    [
        *((service, "service-2") for service in botocore_clients.ENDPOINT_PREFIXES),
        ("rds", "service-2"),
        ("ec2", "paginators-1"),
    ],
)
def test_the_loader_reads_each_model_as_botocore_does_extras_included(service, type_name):
    # rds' service model and ec2's paginators have sdk-extras files: `_find_extras` and `_extras_processor` at work
    ours = botocore_clients._loader(None).load_service_model(service, type_name)
    assert ours == Loader().load_service_model(service, type_name)


def test_a_client_is_made_without_listing_every_service(monkeypatch):
    def listed(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("botocore listed every service: ServiceFolderLoader is not the loader it calls")

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.setattr(botocore_clients, "_shared_loader", None)
    monkeypatch.setattr(Loader, "list_available_services", listed)
    assert botocore_clients.create_client("dynamodb").meta.service_model.service_name == "dynamodb"


def test_botocore_still_builds_a_client_with_the_endpoint_resolver_registered_in_its_internal_components(
    monkeypatch,
):
    import botocore.session

    built: list[Any] = []
    register = botocore.session.ComponentLocator.lazy_register_component

    def spy(self: Any, name: str, factory: Any) -> None:
        def made() -> Any:
            built.append(factory())
            return built[-1]

        register(self, name, made if name == "endpoint_resolver" else factory)

    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    monkeypatch.delenv("AWS_DATA_PATH", raising=False)
    monkeypatch.setattr(botocore.session.ComponentLocator, "lazy_register_component", spy)
    botocore_clients.create_client("dynamodb")
    assert built, "botocore no longer builds a client with the endpoint_resolver its session registered"
    # the one built is the shop's, from the cut file: the shop's services only
    assert [bool(r.get_available_endpoints("dynamodb")) for r in built] == [True]
    assert built[0].get_available_endpoints("ec2") == [], "the client was built with botocore's whole file"
