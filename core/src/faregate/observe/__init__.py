"""What the gateway tells its operators: one report per exchange (:mod:`.report`), the
request log line (:mod:`.request_log`), log configuration (:mod:`.logs`) and Prometheus
metrics (:mod:`.metrics`)."""
