"""new-api's data dashboard options (``DataExportEnabled``, ``DataExportInterval``), read by
the dashboard's figures (:mod:`faregate.management.dashboard`)."""

from __future__ import annotations

from faregate.state import option_specs as specs
from faregate.state.option_specs import OptionSpec

ENABLED = "DataExportEnabled"
OFF_MESSAGE = "the data dashboard is turned off (DataExportEnabled)"

DATA_OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(ENABLED, "true", "The data dashboard: consumption per model and hour at /api/data, "
               "/api/data/self and /api/data/users (off: they answer that it is off, and new-api's console "
               "hides the page).", specs.boolean),
    # new-api flushes its in-memory sums to quota_data every this many minutes; here the sums are
    # read from the consume logs when asked, so they are never behind and there is nothing to flush
    OptionSpec("DataExportInterval", "5", "new-api's minutes between flushes of the dashboard's sums; the "
               "figures are read from the logs when asked (never behind), so it changes nothing.",
               specs.integer(1, 525_600)),
)
