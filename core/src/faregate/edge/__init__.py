"""The edge between the web framework and the exchange: routes, WebSocket peers and the
app-wide error handlers."""
