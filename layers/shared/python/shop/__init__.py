"""The shop's shared domain package: models, keys, repository, services, HTTP support."""

import warnings

# The payments layer leaves out requests' optional character detection (infra.build_layers.LEFT_OUT: stripe decodes
# the bytes itself), and requests warns at its import without one, on every cold start. Both paths to requests
# import this package first: stripe's HTTP client (shop.payments.stripe_adapter, the one module importing stripe) and
# X-Ray's patch of requests when a handler's Tracer is on (after `from shop.runtime import lean_init`). This one message only.
warnings.filterwarnings("ignore", message="Unable to find acceptable character detection dependency", module="requests")
