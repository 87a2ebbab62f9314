"""HTTP support for the four API functions: resolver, auth, request/response schemas, error mapping.

Nothing is imported here, so each function pays at cold start only for the modules it uses.
"""
