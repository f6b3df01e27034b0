"""The version of smoke-core and of the plugin API it provides (docs/compatibility.md)."""

__version__ = "0.2.0"

#: The plugin API this smoke-core provides: the doors ``smoke_core.plugin``,
#: ``smoke_core.providers``, ``smoke_core.testing`` and the hooks. A minor
#: version adds; a major version removes or changes. Plugins state what they
#: need as ``__smoke_plugin_api__ = ">=1.0,<2"``.
PLUGIN_API_VERSION = "1.0"
