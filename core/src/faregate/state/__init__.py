"""In-memory state shared by the relay: the snapshot, options and the change feed."""
