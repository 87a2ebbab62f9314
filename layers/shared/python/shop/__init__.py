"""The shop's shared domain package: models, keys, repository, services, HTTP support."""
