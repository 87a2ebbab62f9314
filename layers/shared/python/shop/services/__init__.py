"""Domain services: the rules (pricing, status machine, stock, ownership) between handlers and repository."""
