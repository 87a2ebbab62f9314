"""HTTP support shared by the four API functions (customers, products, orders, sessions).

Modules: ``errors`` (the one domain-error -> HTTP status table and the error body), ``schemas``
(request/response bodies and parameter types), ``auth`` (JWT claims -> Actor), ``resolver`` (the
Powertools resolver factory with validation and error handlers), ``observability`` (Logger, Metrics,
optional Tracer, the Lambda entry point), ``idempotency`` (Powertools idempotency on the single table),
``openapi`` (one document for the whole API) and ``seed`` (the fixed data the sample events use).
Nothing here is imported by this package's ``__init__`` so each function pays only for what it uses.
"""
