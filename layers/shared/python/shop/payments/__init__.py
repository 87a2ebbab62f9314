"""Payment provider adapters (the `Payments` and `PaymentWebhooks` ports of shop.services.ports).

Only the code that talks to the provider imports a module here, and each imports its SDK itself: a function
that takes no payment never loads `stripe`.
"""
