"""How the shop runs on Lambda: its cold-start measures and its workarounds of what its libraries leave no hook for.

One job a module (docs/architecture.md, "The runtime package"); each reliance on a library's private shape is
pinned by a test. This ``__init__`` imports nothing: a handler's first import stays as cheap as the module it names.
"""
