"""The core's own plugins: ordinary hook implementations, all ``trylast`` so any
installed plugin can go before them; and the core's option sets, collected from their
owners (:mod:`.options`)."""
