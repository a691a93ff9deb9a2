"""The relay: from a client request to an upstream channel and back."""
