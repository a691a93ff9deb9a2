"""The exchange: one client request's way through the gate (admission, attempts,
settlement), independent of web framework and transport."""
