"""Top-ups paid through payment gateways: the provider contract (:mod:`.contract`), prices
(:mod:`.money`), orders completed exactly once (:mod:`.orders`) and the routes serving them
(:mod:`.routes`). The gateways themselves are plugins (``plugins/payments/*``)."""
