"""What a channel's settings change in each request it is sent: the parameter override on the
JSON body (:mod:`faregate.overrides.params`) and the header override
(:mod:`faregate.overrides.headers`). Compiled and checked once when a channel is saved or loaded
into the snapshot, applied per attempt by the exchange; pure rules, no I/O."""
