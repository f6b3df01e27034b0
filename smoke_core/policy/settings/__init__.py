"""Settings: the typed model and who may set each key (``model``), plugin keys
(``specs``), reading and checking a layer (``validation``), merging the layers
under trust (``layers``), the files and the trust store (``files``) and
remembered rules (``remember``). The door is :mod:`smoke_core.settings`.
"""
