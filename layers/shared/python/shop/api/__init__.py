"""HTTP support shared by the four API functions (customers, products, orders, sessions).

Modules: ``errors`` (the one domain-error -> HTTP status table and the error body), ``schemas``
(the shared limits, request-body base and error bodies; each function's own bodies are in
``customer_schemas``, ``product_schemas``, ``session_schemas`` and ``order_schemas``), ``auth``
(JWT claims -> Actor), ``resolver`` (the Powertools resolver factory with validation and error
handlers), ``observability`` (Logger, Metrics, optional Tracer, the Lambda entry point),
``idempotency`` (Powertools idempotency on the single table), ``openapi`` (one document for the
whole API), ``seed`` (the fixed data the sample events use), ``coldstart`` and ``lazy_packages``
(a lean Lambda init; docs/decisions.md, "Cold start").
Nothing here is imported by this package's ``__init__`` so each function pays only for what it uses.
"""
