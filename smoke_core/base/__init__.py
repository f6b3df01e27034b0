"""Plain data shared by every part: errors and their codes, events, messages,
images, the default prompt, project instructions, the version and the pluggy
markers, the cache folder, a workspace's ``.smoke/`` folder and text made
visible to people.

Imports nothing else of smoke_core; everything else may import it.
"""
