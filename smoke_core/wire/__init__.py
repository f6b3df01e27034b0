"""What goes over the wire to a model: the provider contract types, the shared
:class:`HTTPProvider`, HTTP error classification and response limits, model
facts and prices.

Imports only :mod:`smoke_core.base`; imported by the run and the CLI, and by
provider plugins through :mod:`smoke_core.providers`.
"""
